import type { Config } from '../config.js'
import { openPostgresStore } from './postgres/postgres-store.js'
import { openSqliteStore } from './sqlite/sqlite-store.js'
import type { Store } from './store.js'

/** DATABASE_URL -> the engine's store. `onError` hears of background failures (dropped idle connections). */
export function openStore (config: Pick<Config, 'storage' | 'databasePoolSize'>, onError: (error: unknown) => void = () => {}): Store {
  switch (config.storage.engine) {
    case 'sqlite':
      return openSqliteStore(config.storage.path)
    case 'postgres':
      return openPostgresStore(config.storage.url, { poolSize: config.databasePoolSize, onError })
  }
}
