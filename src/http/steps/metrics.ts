import type { Metrics } from '../../services/metrics.js'
import type { ApiRoutes } from '../api-routes.js'
import type { Step } from '../pipeline.js'

/** The methods the service serves; any other counts as `other`, so odd methods cannot add series. */
const METHOD_LABELS: ReadonlySet<string> = new Set(['GET', 'HEAD', 'POST', 'OPTIONS', 'PUT', 'PATCH', 'DELETE'])

/**
 * Requests in flight, and each answered request by method, route template, status and mode (`test`
 * for a test key's request, `live` for every other), with its duration. Unknown routes count as one route, `unmatched`; the framework names the route of a
 * request it answered as its router matches it (exchange.frameworkRoute). Counted in plain numbers, turned into
 * Prometheus series only when scraped (services/metrics.ts).
 */
export function metricsStep (metrics: Metrics | undefined, routes: ApiRoutes): Step {
  if (metrics === undefined) return { name: 'metrics', scope: 'every request' }
  return {
    name: 'metrics',
    scope: 'every request',
    onRequest: function countInFlight () {
      metrics.inFlightRequests++
      return undefined
    },
    onDone: function countRequest (exchange) {
      metrics.inFlightRequests--
      // A request the client gave up on was never answered: in flight no more, and nothing to time.
      if (exchange.abandoned) return
      const method = METHOD_LABELS.has(exchange.method) ? exchange.method : 'other'
      const route = exchange.isApi ? routes.templateOf(exchange) : (exchange.frameworkRoute ?? 'unmatched')
      const key = exchange.key
      metrics.requests.record(exchange.elapsedMs() / 1000, method, route, String(exchange.statusCode), key !== null && key.test ? 'test' : 'live')
    }
  }
}
