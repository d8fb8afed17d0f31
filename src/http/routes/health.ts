import type { FastifyInstance } from 'fastify'
import { ApiError } from '../../core/errors.js'
import type { Store } from '../../storage/store.js'
import { JSON_TYPE } from '../headers.js'

const READINESS_TIMEOUT_MS = 2000

/**
 * Probes for load balancers and orchestrators: outside /v1, no key, not in the API document.
 * On PostgreSQL, /readyz also names the primary and each replica's state and lag.
 */
export async function healthRoutes (app: FastifyInstance, { store }: { store: Store }): Promise<void> {
  app.get('/healthz', { schema: { hide: true } }, async function liveness (_request, reply) {
    return reply.type(JSON_TYPE).send('{"status":"ok"}')
  })

  app.get('/readyz', { schema: { hide: true } }, async function readiness (_request, reply) {
    let timer: NodeJS.Timeout | undefined
    const timeout = new Promise<never>((_resolve, reject) => {
      timer = setTimeout(() => reject(new Error('timeout')), READINESS_TIMEOUT_MS)
    })
    try {
      await Promise.race([store.ping(), timeout])
    } catch {
      throw new ApiError('service_unavailable', 'the database does not answer', { 'retry-after': '1' })
    } finally {
      clearTimeout(timer)
    }
    const replication = store.replicationStats?.()
    if (replication === undefined) return reply.type(JSON_TYPE).send('{"status":"ready"}')
    // Which PostgreSQL host takes writes and how far each replica lags: what an operator asks first in a failover.
    const { primary, timeline, hosts, replicas } = replication
    return reply.type(JSON_TYPE).send(JSON.stringify({ status: 'ready', primary, timeline, hosts, replicas }))
  })
}
