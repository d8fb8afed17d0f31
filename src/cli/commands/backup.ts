import { existsSync } from 'node:fs'
import { parseArgs } from 'node:util'
import { CliError, type Command } from '../context.js'
import { withStore } from '../with-store.js'

export const backup: Command = {
  usage: 'animal-store backup --to FILE',
  summary: 'Copy the SQLite database to FILE while servers keep running (PostgreSQL: use pg_dump).',
  run: async (args, context) => {
    const { values } = parseArgs({ args, options: { to: { type: 'string' } }, strict: true })
    const target = values.to
    if (target === undefined || target === '') throw new CliError('--to is required')
    if (existsSync(target)) throw new CliError(`${target} exists; choose a new file`)
    await withStore(context, async (store) => {
      if (store.backupTo === undefined) throw new CliError('backup copies SQLite databases; for PostgreSQL use pg_dump (see docs/operations.md)')
      await store.backupTo(target)
    })
    context.stdout(`Backed up to ${target}.`)
    return 0
  }
}
