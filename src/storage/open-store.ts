import type { Config } from '../config.js'
import { openPostgresStore } from './postgres/postgres-store.js'
import { openSqliteStore } from './sqlite/sqlite-store.js'
import type { Store } from './store.js'

export interface StoreEvents {
  /** Background failures, such as a dropped idle connection. */
  onError?: (error: unknown) => void
  /** Settings that put durability at risk. */
  onWarning?: (message: string) => void
}

/** DATABASE_URL -> the engine's store. */
export function openStore (config: Pick<Config, 'storage' | 'databasePoolSize' | 'writeBatchSize'>, events: StoreEvents = {}): Store {
  switch (config.storage.engine) {
    case 'sqlite':
      return openSqliteStore(config.storage.path, { writeBatchSize: config.writeBatchSize })
    case 'postgres':
      return openPostgresStore(config.storage.url, {
        poolSize: config.databasePoolSize,
        writeBatchSize: config.writeBatchSize,
        onError: events.onError ?? (() => {}),
        onWarning: events.onWarning ?? ((message) => process.stderr.write(`warning: ${message}\n`))
      })
  }
}
