import type { TestContext } from 'node:test'
import assert from 'node:assert/strict'
import { pino } from 'pino'
import { loadConfig } from '../../src/config.js'
import { openPostgresStore, type PostgresStoreOptions } from '../../src/storage/postgres/postgres-store.js'
import type { ReplicationStats, Store } from '../../src/storage/store.js'
import { TEST_DEFAULTS, buildServedApp } from './build-app.js'
import { eventually } from './eventually.js'

export interface Instance {
  store: Store
  baseUrl: string
}

/** A store on the given hosts (and replicas), closed after the test. */
export function openStoreOn (t: TestContext, urls: string[], options: Partial<PostgresStoreOptions> = {}): Store {
  const store = openPostgresStore(urls, { poolSize: 8, onError: () => {}, ...options })
  t.after(() => store.close())
  return store
}

/** One instance of the service on its own store, listening on a loopback port. */
export async function startInstance (t: TestContext, urls: string[], options: Partial<PostgresStoreOptions> = {}): Promise<Instance> {
  const store = openStoreOn(t, urls, options)
  await store.migrate()
  const app = await buildServedApp({ config: loadConfig(TEST_DEFAULTS), store, logger: pino({ level: 'silent' }) })
  t.after(() => app.close())
  await app.listen({ host: '127.0.0.1', port: 0 })
  const address = app.server.address()
  if (address === null || typeof address === 'string') throw new Error('no TCP address')
  return { store, baseUrl: `http://127.0.0.1:${address.port}` }
}

const statsOf = (store: Store): ReplicationStats => {
  const stats = store.replicationStats?.()
  if (stats === undefined) throw new Error('the store reports no replication')
  return stats
}

/**
 * Waits until the store reads from its replica: the replica has replayed a position the primary
 * reported after the store first saw it. Writes on the primary meanwhile make that happen sooner.
 */
export async function replicaInUse (store: Store, ms = 30_000): Promise<void> {
  await eventually(() => assert.equal(statsOf(store).replicas[0]?.state, 'in use', `the replica is not in use: ${JSON.stringify(statsOf(store))}`), { timeout: ms })
}

export const replicaReads = (store: Store): ReplicationStats['replicaReads'] => statsOf(store).replicaReads
