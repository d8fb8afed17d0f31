import { emptyAnswer } from '../exchange.js'
import type { Step } from '../pipeline.js'

const ALLOWED_METHODS = 'GET, HEAD, POST'
const ALLOWED_HEADERS = 'Authorization, Content-Type, Idempotency-Key, If-None-Match, X-Request-Id, Traceparent'
const EXPOSED_HEADERS = 'Link, Location, ETag, Deprecation, Sunset, X-Request-Id, Retry-After, RateLimit, RateLimit-Policy, WWW-Authenticate'
const PREFLIGHT_MAX_AGE_SECONDS = '600'

const PREFLIGHT_FIELDS: readonly string[] = [
  'access-control-allow-methods', ALLOWED_METHODS,
  'access-control-allow-headers', ALLOWED_HEADERS,
  'access-control-max-age', PREFLIGHT_MAX_AGE_SECONDS
]

/**
 * CORS for the browser origins CORS_ORIGINS lists (none by default: no CORS header is sent).
 * A preflight from a listed origin is answered here, before authentication, since browsers send
 * it without the Authorization header. Responses say `Vary: Origin`, as they differ by origin.
 * For a fixed list of origins this is a set lookup: @fastify/cors is a plugin of the framework,
 * which no API request reaches.
 */
export function cors (origins: readonly string[]): Step {
  const allowed = new Set(origins)
  if (allowed.size === 0) return { name: 'CORS', scope: 'api' }
  return {
    name: 'CORS',
    scope: 'api',
    onRequest: function applyCors (exchange) {
      exchange.header('vary', 'Origin')
      const origin = exchange.headers.origin
      if (origin === undefined || !allowed.has(origin)) return undefined
      exchange.header('access-control-allow-origin', origin)
      if (exchange.method === 'OPTIONS' && exchange.headers['access-control-request-method'] !== undefined) return emptyAnswer(204, PREFLIGHT_FIELDS)
      exchange.header('access-control-expose-headers', EXPOSED_HEADERS)
      return undefined
    }
  }
}
