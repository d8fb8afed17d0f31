import type { StorageLocation } from '../config.js'
import type { Store } from './store.js'
import { openSqliteStore } from './sqlite/sqlite-store.js'

export async function openStore (location: StorageLocation): Promise<Store> {
  switch (location.engine) {
    case 'sqlite':
      return openSqliteStore(location.path)
    case 'postgres':
      throw new Error('PostgreSQL storage is not available yet: unset DATABASE_URL or use sqlite:<path>')
  }
}
