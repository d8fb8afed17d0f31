import { createHash, timingSafeEqual } from 'node:crypto'
import type { FastifyInstance } from 'fastify'
import { bearerTokenOf } from '../../core/api-keys.js'
import { ApiError, errors } from '../../core/errors.js'
import { clusterMetricsOfWorker } from '../../services/cluster-metrics.js'
import type { Metrics } from '../../services/metrics.js'

const digest = (text: string): Buffer => createHash('sha256').update(text).digest()

/** A scrape flood costs one rendering a second: every scrape within it gets the same text. */
const RENDER_CACHE_MS = 1000

/**
 * GET /metrics in Prometheus text format (outside /v1, not in the API document), for scrapers that
 * send `Authorization: Bearer <METRICS_TOKEN>`. Without METRICS_TOKEN it is not served at all: a
 * scrape renders every series, so an open /metrics let anyone turn a request into milliseconds of
 * the server's time. In a cluster worker the text is every worker's metrics, summed by the
 * primary (services/cluster-metrics.ts), whichever worker is scraped.
 */
export async function metricsRoutes (app: FastifyInstance, { metrics, token }: { metrics: Metrics, token: string }): Promise<void> {
  const expected = digest(token)
  const inCluster = clusterMetricsOfWorker(metrics.registry)
  if (inCluster !== undefined) app.addHook('onClose', async () => { inCluster.stop() })
  const render = inCluster?.sum ?? (async () => await metrics.registry.metrics())
  let rendered: { text: Promise<string>, at: number } | undefined
  app.get('/metrics', { schema: { hide: true } }, async function getMetrics (request, reply) {
    const presented = bearerTokenOf(request.headers.authorization).token
    if (presented === undefined || !timingSafeEqual(digest(presented), expected)) {
      throw new ApiError('unauthorized', 'GET /metrics needs Authorization: Bearer <METRICS_TOKEN>', { 'www-authenticate': 'Bearer realm="metrics"' })
    }
    const now = Date.now()
    if (rendered === undefined || now - rendered.at >= RENDER_CACHE_MS) rendered = { text: render(), at: now }
    const current = rendered
    try {
      return reply.type(metrics.registry.contentType).send(await current.text)
    } catch (error) {
      // Not kept: the next scrape asks again.
      if (rendered === current) rendered = undefined
      request.log.warn({ err: error }, 'the workers\' metrics could not be gathered')
      throw errors.metricsUnavailable()
    }
  })
}
