import type { FastifyInstance } from 'fastify'
import { errors } from '../../core/errors.js'
import type { DependencyState, Readiness } from '../../services/readiness.js'
import type { Store } from '../../storage/store.js'
import { JSON_TYPE } from '../headers.js'

const READINESS_TIMEOUT_MS = 2000

/** Resolves when the database answers within READINESS_TIMEOUT_MS; false otherwise. */
async function databaseAnswers (store: Store): Promise<boolean> {
  let timer: NodeJS.Timeout | undefined
  const timeout = new Promise<never>((_resolve, reject) => {
    timer = setTimeout(() => reject(new Error('timeout')), READINESS_TIMEOUT_MS)
  })
  try {
    await Promise.race([store.ping(), timeout])
    return true
  } catch {
    return false
  } finally {
    clearTimeout(timer)
  }
}

/**
 * Each dependency and its state: the database (on PostgreSQL, also which host takes writes, on
 * which timeline, and each host's role: what an operator asks first in a failover), each read
 * replica and its lag, and the others the service reports (services/readiness.ts).
 */
function dependencies (store: Store, up: boolean, others: Record<string, DependencyState>): Record<string, DependencyState | DependencyState[]> {
  const replication = store.replicationStats?.()
  const database: DependencyState = { state: up ? 'up' : 'down', engine: store.engine }
  if (replication === undefined) return { database, ...others }
  const { primary, timeline, hosts, replicas } = replication
  return { database: { ...database, primary, timeline, hosts }, replicas, ...others }
}

/**
 * Probes for load balancers and orchestrators: outside /v1, no key, not in the API document.
 * /readyz is ready while the database answers; a replica or Redis that fails is named, and
 * readiness holds, since the service answers without them.
 */
export async function healthRoutes (app: FastifyInstance, { store, readiness: others }: { store: Store, readiness: Readiness }): Promise<void> {
  app.get('/healthz', { schema: { hide: true } }, async function liveness (_request, reply) {
    return reply.type(JSON_TYPE).send('{"status":"ok"}')
  })

  app.get('/readyz', { schema: { hide: true } }, async function readiness (_request, reply) {
    const [up, reported] = await Promise.all([databaseAnswers(store), others.states()])
    const states = dependencies(store, up, reported)
    if (up) return reply.type(JSON_TYPE).send(JSON.stringify({ status: 'ready', ...states }))
    // The Error body every refusal has, and what says why.
    const refusal = errors.notReady()
    return reply.code(refusal.status).headers(refusal.headers).type(JSON_TYPE).send(JSON.stringify({ ...refusal.toBody(), ...states }))
  })
}
