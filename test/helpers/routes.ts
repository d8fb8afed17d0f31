/** Full paths of the routes in `printRoutes({ commonPrefix: false })` output (a tree, four characters per level). */
export function routePaths (tree: string): string[] {
  const stack: string[] = []
  const paths: string[] = []
  for (const line of tree.split('\n')) {
    const match = /^((?:[│ ] {3})*)[├└]── (\S+)(?: \((.+)\))?$/.exec(line.trimEnd())
    if (!match) continue
    const depth = (match[1] ?? '').length / 4
    stack.length = depth
    const path = (stack[depth - 1] ?? '') + (match[2] ?? '')
    stack.push(path)
    if (match[3] !== undefined) paths.push(path)
  }
  return paths
}
