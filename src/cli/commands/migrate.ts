import { loadConfig } from '../../config.js'
import { openStore } from '../../storage/open-store.js'
import type { Command } from '../context.js'

export const migrate: Command = {
  usage: 'animal-store migrate',
  summary: 'Bring the database schema up to date, then exit.',
  run: async (args, context) => {
    if (args.length > 0) {
      context.stderr(`error: migrate takes no arguments (got ${args.join(' ')})`)
      return 1
    }
    const store = openStore(loadConfig(context.env))
    try {
      const applied = await store.migrate()
      context.stdout(applied.length === 0 ? 'The database schema is up to date.' : `Applied migrations: ${applied.join(', ')}.`)
      return 0
    } finally {
      await store.close()
    }
  }
}
