import { createHash, timingSafeEqual } from 'node:crypto'
import type { FastifyInstance } from 'fastify'
import { bearerTokenOf } from '../../core/api-keys.js'
import { ApiError } from '../../core/errors.js'
import type { Metrics } from '../../services/metrics.js'

const digest = (text: string): Buffer => createHash('sha256').update(text).digest()

/** Counts every request by route template and serves GET /metrics (outside /v1, not in the API document). */
export async function registerMetrics (app: FastifyInstance, { metrics, token }: { metrics: Metrics, token: string | undefined }): Promise<void> {
  app.addHook('onRequest', function countInFlight (_request, _reply, done) {
    metrics.inFlightRequests++
    done()
  })
  app.addHook('onResponse', function countRequest (request, reply, done) {
    metrics.inFlightRequests--
    metrics.requests.record(reply.elapsedTime / 1000, request.method, request.routeOptions.url ?? 'unmatched', String(reply.statusCode))
    done()
  })

  const expected = token === undefined ? undefined : digest(token)
  app.get('/metrics', { schema: { hide: true } }, async function getMetrics (request, reply) {
    if (expected !== undefined) {
      const presented = bearerTokenOf(request.headers.authorization).token
      if (presented === undefined || !timingSafeEqual(digest(presented), expected)) {
        throw new ApiError('unauthorized', 'GET /metrics needs Authorization: Bearer <METRICS_TOKEN>', { 'www-authenticate': 'Bearer realm="metrics"' })
      }
    }
    return reply.type(metrics.registry.contentType).send(await metrics.registry.metrics())
  })
}
