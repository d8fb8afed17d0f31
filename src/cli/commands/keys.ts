import { parseArgs } from 'node:util'
import { createApiKey, listApiKeys, revokeApiKey } from '../../services/accounts.js'
import type { ApiKeyRow } from '../../storage/store.js'
import { CliError, type Command } from '../context.js'
import { withStore } from '../with-store.js'

export const keysCreate: Command = {
  usage: 'animal-store keys create --email E [--label L]',
  summary: 'Generate an API key for the account; the key is printed once, alone on the last line.',
  run: async (args, context) => {
    const { values } = parseArgs({ args, options: { email: { type: 'string' }, label: { type: 'string' } }, strict: true })
    if (values.email === undefined) throw new CliError('--email is required')
    const email = values.email
    const { key, row, account } = await withStore(context, (store) => createApiKey(store, { email, label: values.label }))
    context.stdout(`Created key ${row.id}${row.label === null ? '' : ` (${row.label})`} for ${account.email}.`)
    context.stdout('Copy it now: it is not stored and cannot be shown again.')
    context.stdout(key)
    return 0
  }
}

const iso = (date: Date | null): string | null => date?.toISOString() ?? null

function toJson (row: ApiKeyRow): object {
  return { id: row.id, label: row.label, prefix: row.prefix, createdAt: iso(row.createdAt), lastUsedAt: iso(row.lastUsedAt), revokedAt: iso(row.revokedAt) }
}

function table (rows: string[][]): string {
  const widths = rows[0]?.map((_, column) => Math.max(...rows.map((row) => row[column]?.length ?? 0))) ?? []
  return rows.map((row) => row.map((cell, column) => cell.padEnd(widths[column] ?? 0)).join('  ').trimEnd()).join('\n')
}

export const keysList: Command = {
  usage: 'animal-store keys list --email E [--json]',
  summary: "List the account's keys (never their secrets).",
  run: async (args, context) => {
    const { values } = parseArgs({ args, options: { email: { type: 'string' }, json: { type: 'boolean' } }, strict: true })
    if (values.email === undefined) throw new CliError('--email is required')
    const email = values.email
    const rows = await withStore(context, (store) => listApiKeys(store, email))
    if (values.json === true) {
      context.stdout(JSON.stringify(rows.map(toJson), null, 2))
      return 0
    }
    const cells = rows.map((row) => [row.id, row.label ?? '-', row.prefix, iso(row.createdAt) ?? '-', iso(row.lastUsedAt) ?? 'never', iso(row.revokedAt) ?? '-'])
    context.stdout(table([['ID', 'LABEL', 'PREFIX', 'CREATED', 'LAST USED', 'REVOKED'], ...cells]))
    return 0
  }
}

export const keysRevoke: Command = {
  usage: 'animal-store keys revoke <keyId>',
  summary: 'Revoke a key; every running server refuses it within 1 second.',
  run: async (args, context) => {
    const { positionals } = parseArgs({ args, allowPositionals: true, strict: true })
    if (positionals.length !== 1) throw new CliError('give exactly one key id, as in: animal-store keys revoke key_…')
    const keyId = positionals[0] ?? ''
    const result = await withStore(context, (store) => revokeApiKey(store, keyId))
    if (result === 'unknown') throw new CliError(`no key has the id ${keyId}`)
    context.stdout(result === 'revoked'
      ? `Revoked key ${keyId}. Running servers refuse it within 1 second.`
      : `Key ${keyId} was already revoked.`)
    return 0
  }
}
