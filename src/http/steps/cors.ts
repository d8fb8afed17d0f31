import type { Step } from '../pipeline.js'

const ALLOWED_METHODS = 'GET, HEAD, POST'
const ALLOWED_HEADERS = 'Authorization, Content-Type, Idempotency-Key, If-None-Match, X-Request-Id, Traceparent'
const EXPOSED_HEADERS = 'Link, Location, ETag, Deprecation, Sunset, X-Request-Id, Retry-After, RateLimit, RateLimit-Policy, WWW-Authenticate'
const PREFLIGHT_MAX_AGE_SECONDS = '600'

/**
 * CORS for the browser origins CORS_ORIGINS lists (none by default: no CORS header is sent).
 * A preflight from a listed origin is answered here, before authentication, since browsers send
 * it without the Authorization header. Responses say `Vary: Origin`, as they differ by origin.
 *
 * Written here rather than with @fastify/cors: for a fixed list of origins it is a set lookup,
 * where the plugin copies its whole option object and builds closures on every request, which
 * cost more than every other step of a cached read together (docs/performance.md).
 */
export function cors (origins: readonly string[]): Step {
  const allowed = new Set(origins)
  return {
    name: 'CORS',
    scope: 'api',
    onRequest: allowed.size === 0
      ? undefined
      : function applyCors (request, reply, done) {
        reply.header('vary', 'Origin')
        const origin = request.headers.origin
        if (origin === undefined || !allowed.has(origin)) {
          done()
          return
        }
        reply.header('access-control-allow-origin', origin)
        if (request.method === 'OPTIONS' && request.headers['access-control-request-method'] !== undefined) {
          reply.code(204)
            .header('access-control-allow-methods', ALLOWED_METHODS)
            .header('access-control-allow-headers', ALLOWED_HEADERS)
            .header('access-control-max-age', PREFLIGHT_MAX_AGE_SECONDS)
            .send()
          return
        }
        reply.header('access-control-expose-headers', EXPOSED_HEADERS)
        done()
      }
  }
}
