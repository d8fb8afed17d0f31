import { postgresUrls, type Config } from '../config.js'
import { openPostgresStore } from './postgres/postgres-store.js'
import { openSqliteStore } from './sqlite/sqlite-store.js'
import type { Store } from './store.js'

export interface StoreEvents {
  /** Background failures, such as a dropped idle connection. */
  onError?: (error: unknown) => void
  /** Settings that put durability at risk, and a new PostgreSQL primary. */
  onWarning?: (message: string) => void
}

const warn = (message: string): void => { process.stderr.write(`warning: ${message}\n`) }

/** DATABASE_URL (and DATABASE_REPLICA_URLS) -> the engine's store. */
export function openStore (config: Pick<Config, 'storage' | 'databasePoolSize' | 'writeBatchSize' | 'writeBatchWaitMs' | 'sqliteSynchronous'> &
  Partial<Pick<Config, 'databaseReplicaUrls' | 'replicaMaxLagMs'>>, events: StoreEvents = {}): Store {
  switch (config.storage.engine) {
    case 'sqlite':
      if (config.sqliteSynchronous === 'off') (events.onWarning ?? warn)('SQLITE_SYNCHRONOUS=off: commits are not synced, so a power loss or operating-system crash can lose acknowledged creates or corrupt the database')
      return openSqliteStore(config.storage.path, { writeBatchSize: config.writeBatchSize, writeBatchWaitMs: config.writeBatchWaitMs, synchronous: config.sqliteSynchronous })
    case 'postgres':
      return openPostgresStore(postgresUrls(config.storage.url), {
        poolSize: config.databasePoolSize,
        replicaUrls: config.databaseReplicaUrls,
        replicaMaxLagMs: config.replicaMaxLagMs,
        writeBatchSize: config.writeBatchSize,
        writeBatchWaitMs: config.writeBatchWaitMs,
        onError: events.onError ?? (() => {}),
        onWarning: events.onWarning ?? warn
      })
  }
}
