/**
 * The URL with its path made routable: a `%` that does not start an escape, and a run of
 * escapes that is not valid UTF-8 (`%FF`), are themselves escaped, so the router matches
 * them literally and the request gets the route's own answer (a 400 naming the parameter,
 * a 404, a 405) instead of a bare "bad URL" before routing. Valid escapes are kept.
 */
export function tolerantUrl (url: string): string {
  const queryStart = url.indexOf('?')
  const path = queryStart === -1 ? url : url.slice(0, queryStart)
  if (!path.includes('%')) return url
  try {
    decodeURIComponent(path)
    return url
  } catch {
    const routable = path
      .replace(/%(?![0-9A-Fa-f]{2})/g, '%25')
      .replace(/(?:%[0-9A-Fa-f]{2})+/g, (run) => {
        try {
          decodeURIComponent(run)
          return run
        } catch {
          return run.replace(/%/g, '%25')
        }
      })
    return routable + (queryStart === -1 ? '' : url.slice(queryStart))
  }
}
