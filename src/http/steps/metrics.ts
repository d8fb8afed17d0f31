import type { Metrics } from '../../services/metrics.js'
import type { Step } from '../pipeline.js'

/** The methods the service serves; any other counts as `other`, so odd methods cannot add series. */
const METHOD_LABELS: ReadonlySet<string> = new Set(['GET', 'HEAD', 'POST', 'OPTIONS', 'PUT', 'PATCH', 'DELETE'])

/**
 * Requests in flight, and each answered request by method, route template and status, with its
 * duration. Unknown routes count as one route, `unmatched`. Counted in plain numbers, turned into
 * Prometheus series only when scraped (services/metrics.ts).
 */
export function metricsStep (metrics: Metrics | undefined): Step {
  if (metrics === undefined) return { name: 'metrics', scope: 'every request' }
  return {
    name: 'metrics',
    scope: 'every request',
    onRequest: function countInFlight (_request, _reply, done) {
      metrics.inFlightRequests++
      done()
    },
    onResponse: function countRequest (request, reply, done) {
      metrics.inFlightRequests--
      const method = METHOD_LABELS.has(request.method) ? request.method : 'other'
      const route = request.is404 ? 'unmatched' : (request.routeOptions.url ?? 'unmatched')
      metrics.requests.record(reply.elapsedTime / 1000, method, route, String(reply.statusCode))
      done()
    },
    // Instead of onResponse: the request was never answered.
    onRequestAbort: function countAbandoned (_request, done) {
      metrics.inFlightRequests--
      done()
    }
  }
}
