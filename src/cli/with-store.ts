import { loadConfig, type Config } from '../config.js'
import { openStore } from '../storage/open-store.js'
import type { Store } from '../storage/store.js'
import type { CliContext } from './context.js'

/** Opens the configured database, brought up to date, for the length of one command. */
export async function withStore<T> (context: CliContext, work: (store: Store, config: Readonly<Config>) => Promise<T>): Promise<T> {
  const config = loadConfig(context.env)
  const store = openStore(config)
  try {
    await store.migrate()
    return await work(store, config)
  } finally {
    await store.close()
  }
}
