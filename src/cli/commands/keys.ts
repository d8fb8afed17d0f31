import { parseArgs } from 'node:util'
import { DEFAULT_ROLL_GRACE_MS, SCOPES } from '../../core/api-keys.js'
import { operationsAllowedBy } from '../../http/routes/pets.js'
import { createApiKey, durationOrFail, resetSandboxOf, expiryOrFail, keyUsageSince, listApiKeys, revokeApiKey, rollApiKey, scopesOrFail } from '../../services/accounts.js'
import { USAGE_KEPT_DAYS } from '../../services/usage-recorder.js'
import type { ApiKeyRow, Store, UsageCount, UsageOutcome } from '../../storage/store.js'
import { CliError, type CliContext, type Command } from '../context.js'
import { spanText } from '../../core/span-text.js'
import { integerOption, iso, table } from '../format.js'
import { mailLinksOf } from '../../services/mail-messages.js'
import { withStore } from '../with-store.js'

const SECRET_NOTE = 'Copy it now: it is not stored and cannot be shown again.'
const TEST_KEY_NOTE = "Mode: test (the same base URL and paths; it reads and writes only the account's sandbox)."

/** Scopes as the CLI writes them, and as --scopes takes them back. */
const scopesList = (row: ApiKeyRow): string => row.scopes.join(',')

/** What each scope allows, read from the routes: `animals:read allows listPets and getPet, …`. */
const SCOPES_ALLOW = SCOPES.map((scope) => `${scope} allows ${new Intl.ListFormat('en').format(operationsAllowedBy(scope))}`).join(', ')

function expiryText (expiresAt: Date | null, now = Date.now()): string {
  if (expiresAt === null) return 'never'
  const left = expiresAt.getTime() - now
  return `${expiresAt.toISOString()} (${left > 0 ? `in ${spanText(left)}` : 'passed'})`
}

/**
 * Prints the lines that describe a new key and the key alone on the last line, in one write, so that nothing
 * can fail between the first line and the key. A key whose secret could not be written at all (standard
 * output closed) is revoked: nobody holds it, and it must not count as live.
 */
async function deliverNewKey (context: CliContext, store: Store, lines: string[], created: { row: ApiKeyRow, key: string }, retry: string): Promise<void> {
  const { row, key } = created
  context.stdout([...lines, ...(row.mode === 'test' ? [TEST_KEY_NOTE] : []), `Scopes: ${scopesList(row)}`, `Expires: ${expiryText(row.expiresAt)}`, SECRET_NOTE, key].join('\n'))
  if (await context.written?.() !== false) return
  await revokeApiKey(store, row.id)
  throw new CliError(`standard output was closed before the new key ${row.id} was printed: the key is revoked; ${retry}`)
}

export const keysCreate: Command = {
  usage: 'animal-store keys create --email E [--label L] [--scopes S] [--expires-in D | --expires-at T] [--test]',
  summary: 'Generate an API key for the account; the key is printed once, alone on the last line.',
  description: [
    'Options:',
    '  --email E        the account (required)',
    '  --label L        a name for the key, such as the machine it is for',
    `  --scopes S       what the key may do, comma-separated: ${SCOPES.join(', ')} (default: both)`,
    `                   ${SCOPES_ALLOW}`,
    '  --expires-in D   the key stops working after D: 30m, 12h, 90d (units s, m, h, d, w; at most ten years)',
    '  --expires-at T   the key stops working at T, an ISO 8601 time with a zone: 2027-01-31T18:00:00Z',
    '                   (default: the key does not expire)',
    '  --test           a test key (ask_test_…): it reads and writes only the account\'s sandbox, a catalogue of',
    '                   its own seeded with demo animals (default: a live key, for the real catalogue)',
    '',
    'The lines before the key say its id, scopes and expiry. The key is stored only as a SHA-256 hash.',
    'Refused when the account has 100 live keys (a rolled key in its grace period counts) or has',
    'generated 30 keys in the last hour.'
  ].join('\n'),
  run: async (args, context) => {
    const { values } = parseArgs({
      args,
      options: { email: { type: 'string' }, label: { type: 'string' }, scopes: { type: 'string' }, 'expires-in': { type: 'string' }, 'expires-at': { type: 'string' }, test: { type: 'boolean' } },
      strict: true
    })
    if (values.email === undefined) throw new CliError('--email is required')
    const email = values.email
    const scopes = values.scopes === undefined ? undefined : scopesOrFail(values.scopes)
    const expiresAt = expiryOrFail({ expiresIn: values['expires-in'], expiresAt: values['expires-at'] })
    await withStore(context, async (store, config) => {
      const created = await createApiKey(store, { email, label: values.label, scopes, expiresAt, mode: values.test === true ? 'test' : 'live' }, { actor: 'cli', links: mailLinksOf(config) })
      const { row, account } = created
      await deliverNewKey(context, store, [`Created key ${row.id}${row.label === null ? '' : ` (${row.label})`} for ${account.email}.`], created, 'run the command again')
    })
    return 0
  }
}

type KeyState = 'live' | 'revoked' | 'expired'

/** The key's state when it was read, from the store's one definition of a live key. */
function stateOf (row: ApiKeyRow): KeyState {
  return row.revokedAt !== null ? 'revoked' : row.live ? 'live' : 'expired'
}

function toJson (row: ApiKeyRow): object {
  return {
    id: row.id,
    label: row.label,
    prefix: row.prefix,
    createdAt: iso(row.createdAt),
    lastUsedAt: iso(row.lastUsedAt),
    revokedAt: iso(row.revokedAt),
    scopes: row.scopes,
    expiresAt: iso(row.expiresAt),
    rolledTo: row.rolledTo,
    state: stateOf(row),
    mode: row.mode
  }
}

export const keysList: Command = {
  usage: 'animal-store keys list --email E [--json]',
  summary: "List the account's keys (never their secrets).",
  description: [
    'A table: ID, LABEL, PREFIX, SCOPES, CREATED, EXPIRES, LAST USED, REVOKED, STATE (live, revoked or',
    'expired; a rolled key also names the key that replaced it); a test key\'s PREFIX starts ask_test_. Last-used',
    'times lag real use by up to a minute.',
    '',
    'With --json, an array, oldest key first, of',
    '  { "id", "label", "prefix", "createdAt", "lastUsedAt", "revokedAt", "scopes": ["animals:read", …],',
    '    "expiresAt", "rolledTo", "state": "live" | "revoked" | "expired", "mode": "live" | "test" }',
    'with times in ISO 8601 (UTC) or null.'
  ].join('\n'),
  run: async (args, context) => {
    const { values } = parseArgs({ args, options: { email: { type: 'string' }, json: { type: 'boolean' } }, strict: true })
    if (values.email === undefined) throw new CliError('--email is required')
    const email = values.email
    const rows = await withStore(context, (store) => listApiKeys(store, email))
    if (values.json === true) {
      context.stdout(JSON.stringify(rows.map(toJson), null, 2))
      return 0
    }
    const cells = rows.map((row) => [
      row.id, row.label ?? '-', row.prefix, scopesList(row), iso(row.createdAt) ?? '-', iso(row.expiresAt) ?? 'never',
      iso(row.lastUsedAt) ?? 'never', iso(row.revokedAt) ?? '-', `${stateOf(row)}${row.rolledTo === null ? '' : `, rolled to ${row.rolledTo}`}`
    ])
    context.stdout(table([['ID', 'LABEL', 'PREFIX', 'SCOPES', 'CREATED', 'EXPIRES', 'LAST USED', 'REVOKED', 'STATE'], ...cells]))
    return 0
  }
}

function onlyKeyId (positionals: string[], command: string): string {
  if (positionals.length !== 1) throw new CliError(`give exactly one key id, as in: animal-store ${command} key_…`)
  return positionals[0] ?? ''
}

export const keysRevoke: Command = {
  usage: 'animal-store keys revoke <keyId>',
  summary: 'Revoke a key; every running server refuses it within 1 second.',
  run: async (args, context) => {
    const { positionals } = parseArgs({ args, allowPositionals: true, strict: true })
    const keyId = onlyKeyId(positionals, 'keys revoke')
    const result = await withStore(context, (store) => revokeApiKey(store, keyId))
    if (result === 'unknown') throw new CliError(`no key has the id ${keyId}`)
    context.stdout(result === 'revoked'
      ? `Revoked key ${keyId}. Running servers refuse it within 1 second.`
      : `Key ${keyId} was already revoked.`)
    return 0
  }
}

export const keysRoll: Command = {
  usage: 'animal-store keys roll <keyId> [--grace D] [--test | --live]',
  summary: 'Replace a live key with a new one; the old key keeps working for a grace period (24h unless told).',
  description: [
    'Options:',
    `  --grace D   how long the old key keeps working beside the new one: 30m, 12h, 7d (default ${spanText(DEFAULT_ROLL_GRACE_MS)});`,
    '              0 ends the old key at once. An old key that expires sooner keeps its own expiry.',
    '  --test       the new key is a test key (ask_test_…; it reads and writes only the account\'s sandbox)',
    '  --live       the new key is a live key (default: the mode of the old key)',
    '',
    'The new key has the label and scopes of the old one (and, when the old one expires, the same lifetime',
    'from now). The lines before the new key say the old key id, until when it works, and the new key id;',
    'the new key is alone on the last line. Refused for an unknown, revoked or expired key, and when the',
    'account has 100 live keys (the old key counts until its grace period ends) or has generated 30 keys',
    'in the last hour.'
  ].join('\n'),
  run: async (args, context) => {
    const { values, positionals } = parseArgs({ args, allowPositionals: true, options: { grace: { type: 'string' }, test: { type: 'boolean' }, live: { type: 'boolean' } }, strict: true })
    const keyId = onlyKeyId(positionals, 'keys roll')
    if (values.test === true && values.live === true) throw new CliError('give --test or --live, not both')
    const mode = values.test === true ? 'test' : values.live === true ? 'live' : undefined
    const graceMs = values.grace === undefined ? DEFAULT_ROLL_GRACE_MS : durationOrFail(values.grace, 'the grace period')
    await withStore(context, async (store, config) => {
      const rolled = await rollApiKey(store, keyId, { graceMs, mode }, { actor: 'cli', links: mailLinksOf(config) })
      const { row, old } = rolled
      const until = old.expiresAt ?? new Date()
      const lines = [old.live
        ? `Rolled key ${old.id}${old.label === null ? '' : ` (${old.label})`}: it keeps working until ${until.toISOString()} (${spanText(until.getTime() - Date.now())} from now), beside its replacement.`
        : `Rolled key ${old.id}${old.label === null ? '' : ` (${old.label})`}: it stopped working at ${until.toISOString()}; running servers refuse it within 1 second.`,
      `New key ${row.id} replaces it.`]
      await deliverNewKey(context, store, lines, rolled, `generate a new one with animal-store keys create (${old.id} works until ${until.toISOString()})`)
    })
    return 0
  }
}

const OUTCOMES: readonly UsageOutcome[] = ['2xx', '4xx', '5xx']
type Totals = Record<UsageOutcome, number> & { total: number }

const emptyTotals = (): Totals => ({ '2xx': 0, '4xx': 0, '5xx': 0, total: 0 })

function addTo (totals: Totals, count: UsageCount): void {
  totals[count.outcome] += count.count
  totals.total += count.count
}

/** Sums the hourly rows by a key (a UTC day, an operation), in the order the keys first appear. */
function sumBy (counts: readonly UsageCount[], keyOf: (count: UsageCount) => string): Map<string, Totals> {
  const sums = new Map<string, Totals>()
  for (const count of counts) {
    const key = keyOf(count)
    let totals = sums.get(key)
    if (totals === undefined) sums.set(key, totals = emptyTotals())
    addTo(totals, count)
  }
  return sums
}

const dayOf = (count: UsageCount): string => count.hour.toISOString().slice(0, 10)

function totalsTable (first: string, sums: Map<string, Totals>, total: Totals): string {
  const cells = [...sums].map(([name, totals]) => [name, ...OUTCOMES.map((outcome) => String(totals[outcome])), String(totals.total)])
  return table([[first, '2XX', '4XX', '5XX', 'TOTAL'], ...cells, ['total', ...OUTCOMES.map((outcome) => String(total[outcome])), String(total.total)]], new Set([1, 2, 3, 4]))
}

export const keysUsage: Command = {
  usage: 'animal-store keys usage <keyId> [--days N] [--json]',
  summary: "The key's requests over the last N days (default 30): per UTC day by outcome, and per operation.",
  description: [
    'Options:',
    `  --days N   how many days back, 1 to ${USAGE_KEPT_DAYS} (default 30): the last N × 24 hours, the current hour included`,
    '  --json     a machine-readable object instead of tables',
    '',
    'Servers count every request a key makes, per hour, operation (listPets, getPet, createPet; other for',
    'a request that matched none) and outcome (2xx: any status below 400, 4xx, 5xx), and store the counts',
    `within a minute; they are kept ${USAGE_KEPT_DAYS} days. These are the numbers the developer portal shows.`,
    'The tables leave out days without requests.',
    '',
    'With --json:',
    '  { "keyId": "key_…", "mode": "live" | "test", "days": 30, "since": "<ISO: the first hour counted>", "until": "<ISO: when asked>",',
    '    "totals": { "2xx": n, "4xx": n, "5xx": n, "total": n },',
    '    "daily": [ { "day": "2026-11-25", "2xx": n, "4xx": n, "5xx": n, "total": n }, … ],   (UTC days with requests, oldest first)',
    '    "operations": [ { "operation": "listPets", "2xx": n, "4xx": n, "5xx": n, "total": n }, … ],   (most requests first)',
    '    "hourly": [ { "hour": "<ISO: start of the hour>", "operation": "listPets", "outcome": "2xx", "count": n }, … ] }',
    '  ("hourly" holds the stored rows as they are, oldest first; rows with a count of 0 are never stored)'
  ].join('\n'),
  run: async (args, context) => {
    const { values, positionals } = parseArgs({ args, allowPositionals: true, options: { days: { type: 'string' }, json: { type: 'boolean' } }, strict: true })
    const keyId = onlyKeyId(positionals, 'keys usage')
    const days = integerOption(values.days, '--days', 30, 1, USAGE_KEPT_DAYS)
    const now = Date.now()
    const { key, since, counts } = await withStore(context, (store) => keyUsageSince(store, keyId, days, now))
    const total = emptyTotals()
    for (const count of counts) addTo(total, count)
    const daily = sumBy(counts, dayOf)
    const operations = new Map([...sumBy(counts, (count) => count.operation)].sort(([a, x], [b, y]) => y.total - x.total || a.localeCompare(b)))
    if (values.json === true) {
      context.stdout(JSON.stringify({
        keyId: key.id,
        mode: key.mode,
        days,
        since: since.toISOString(),
        until: new Date(now).toISOString(),
        totals: total,
        daily: [...daily].map(([day, totals]) => ({ day, ...totals })),
        operations: [...operations].map(([operation, totals]) => ({ operation, ...totals })),
        hourly: counts.map((count) => ({ hour: count.hour.toISOString(), operation: count.operation, outcome: count.outcome, count: count.count }))
      }, null, 2))
      return 0
    }
    context.stdout(`Requests of ${key.mode === 'test' ? 'test key' : 'key'} ${key.id}${key.label === null ? '' : ` (${key.label})`} in the last ${days} day${days === 1 ? '' : 's'}, since ${since.toISOString()}:`)
    if (total.total === 0) {
      context.stdout('none.')
      return 0
    }
    context.stdout('')
    context.stdout(totalsTable('DAY (UTC)', daily, total))
    context.stdout('')
    context.stdout(totalsTable('OPERATION', operations, total))
    return 0
  }
}

export const sandboxReset: Command = {
  usage: 'animal-store sandbox reset --email E',
  summary: "Empty the account's sandbox (test mode) and seed it again with the demo catalogue; audited.",
  description: [
    'Test keys read and write only their account\'s sandbox. A reset deletes every animal in it, seeds it',
    'again with twenty demo animals (ids from 1), and forgets the Idempotency-Keys its test keys sent.',
    'Every running server shows the reset catalogue within 1 second. The live catalogue is not touched.'
  ].join('\n'),
  run: async (args, context) => {
    const { values } = parseArgs({ args, options: { email: { type: 'string' } }, strict: true })
    if (values.email === undefined) throw new CliError('--email is required')
    const email = values.email
    const account = await withStore(context, (store) => resetSandboxOf(store, email))
    context.stdout(`Reset the sandbox of ${account.email}: it holds the demo catalogue again. Running servers show it within 1 second.`)
    return 0
  }
}
