import { execFileSync } from 'node:child_process'
import { cpSync, mkdirSync, readFileSync, symlinkSync, writeFileSync } from 'node:fs'
import { join } from 'node:path'
import { root } from './support.js'

/**
 * A build of the service whose pipeline list (src/http/pipeline.ts) lacks the given lines: what a
 * step costs is the difference between the service and this build, measured side by side. The
 * shipped code has no switch for it: a step no configuration removes is removed from a copy here.
 * Returns the copy's CLI entry point.
 */
export function serviceWithoutSteps (dir: string, lines: readonly RegExp[]): string {
  mkdirSync(dir, { recursive: true })
  cpSync(join(root, 'src'), join(dir, 'src'), { recursive: true })
  cpSync(join(root, 'scripts'), join(dir, 'scripts'), { recursive: true })
  cpSync(join(root, 'package.json'), join(dir, 'package.json'))
  symlinkSync(join(root, 'node_modules'), join(dir, 'node_modules'), 'dir')
  const pipeline = join(dir, 'src', 'http', 'pipeline.ts')
  let source = readFileSync(pipeline, 'utf8')
  for (const line of lines) {
    const edited = source.replace(line, '')
    if (edited === source) throw new Error(`src/http/pipeline.ts has no line ${line.source}: update bench/without-steps.ts`)
    source = edited
  }
  writeFileSync(pipeline, source)
  execFileSync(process.execPath, ['scripts/build.mjs'], { cwd: dir, stdio: 'inherit' })
  return join(dir, 'dist', 'cli', 'main.js')
}

/** The key lifecycle's steps: the scope check and the usage count. */
export const KEY_LIFECYCLE_STEPS: readonly RegExp[] = [/^\s*authorization\([^)]*\),\n/m, /^\s*keyUsage\([^)]*\),\n/m]
