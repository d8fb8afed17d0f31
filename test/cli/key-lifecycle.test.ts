import { spawn } from 'node:child_process'
import { once } from 'node:events'
import { join } from 'node:path'
import { describe, test, type TestContext } from 'node:test'
import assert from 'node:assert/strict'
import { generateApiKey, hashApiKey, KEY_ID_PATTERN, MAX_LIVE_KEYS, newKeyId } from '../../src/core/api-keys.js'
import { openPostgresStore } from '../../src/storage/postgres/postgres-store.js'
import { openSqliteStore } from '../../src/storage/sqlite/sqlite-store.js'
import type { Store, UsageCount } from '../../src/storage/store.js'
import { tempDir } from '../helpers/build-app.js'
import { eventually, statusOf } from '../helpers/eventually.js'
import { createTestSchema, postgresAvailable } from '../helpers/postgres.js'
import { launchServer } from '../helpers/server-process.js'
import { CLI_PATH, cliEnv, runCli, runNode, type CliResult, type KeyJson } from '../helpers/spawn-cli.js'

const KEY_PATTERN = /^ask_[0-9A-Za-z]{38}$/
const ISO = /^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{3}Z$/
const STACK_FRAME = /\n\s+at /
const HOUR = 3_600_000
const DAY = 24 * HOUR
const EMAIL = 'ops@example.com'

interface Totals { '2xx': number, '4xx': number, '5xx': number, total: number }
interface UsageJson {
  keyId: string
  days: number
  since: string
  until: string
  totals: Totals
  daily: Array<{ day: string } & Totals>
  operations: Array<{ operation: string } & Totals>
  hourly: Array<{ hour: string, operation: string, outcome: string, count: number }>
}

interface AuditJson { id: number, at: string, event: string, actor: string, address: string | null, keyId: string | null, detail: string | null }

function show (result: CliResult): string {
  return `exit ${result.code}\n--- stdout\n${result.stdout}--- stderr\n${result.stderr}`
}

/** A database for the CLI and a store open on the same one, closed after the test. */
interface Setup { env: Record<string, string>, store: Store }

type Engine = { name: 'SQLite' | 'PostgreSQL', setup: (t: TestContext) => Promise<Setup | undefined> }

const ENGINES: Engine[] = [
  {
    name: 'SQLite',
    setup: async (t) => {
      const dbPath = join(tempDir(t), 'animal-store.sqlite')
      const store = openSqliteStore(dbPath)
      t.after(() => store.close())
      await store.migrate()
      return { env: cliEnv(dbPath), store }
    }
  },
  {
    name: 'PostgreSQL',
    setup: async (t) => {
      if (!await postgresAvailable()) {
        t.skip('PostgreSQL is not reachable')
        return undefined
      }
      const databaseUrl = await createTestSchema(t)
      const store = openPostgresStore(databaseUrl, { poolSize: 2, onError: () => {} })
      t.after(() => store.close())
      await store.migrate()
      return { env: { PATH: process.env.PATH ?? '', DATABASE_URL: databaseUrl }, store }
    }
  }
]

async function ok (args: string[], env: Record<string, string>): Promise<CliResult> {
  const result = await runCli(args, env)
  assert.equal(result.code, 0, `${args.join(' ')}\n${show(result)}`)
  assert.doesNotMatch(result.stderr, STACK_FRAME, show(result))
  return result
}

/** Exit 1, exactly one line on stderr matching `message`, no stack trace, no key printed. */
async function fails (args: string[], env: Record<string, string>, message: RegExp): Promise<CliResult> {
  const result = await runCli(args, env)
  assert.equal(result.code, 1, `${args.join(' ')}\n${show(result)}`)
  const lines = result.stderr.trimEnd().split('\n')
  assert.equal(lines.length, 1, `one line on stderr\n${show(result)}`)
  assert.match(lines[0] ?? '', /^error: /, show(result))
  assert.match(lines[0] ?? '', message, show(result))
  assert.doesNotMatch(`${result.stdout}\n${result.stderr}`, STACK_FRAME, show(result))
  assert.doesNotMatch(result.stdout, /ask_/, show(result))
  return result
}

function lines (stdout: string): string[] {
  assert.ok(stdout.endsWith('\n'), `stdout does not end with a newline: ${JSON.stringify(stdout)}`)
  return stdout.slice(0, -1).split('\n')
}

/** The line of `keys create` (Created key …) or `keys roll` (New key …) that names the new key's id. */
const NEW_KEY_ID = new RegExp(`^(?:Created key|New key) (${KEY_ID_PATTERN})\\b`)

/**
 * Runs a key-making command and returns the key (alone on the last line), the lines before it, and the new
 * key's id as those lines name it: the id later commands take, without a `keys list` run to look it up.
 */
async function keyOf (args: string[], env: Record<string, string>): Promise<{ key: string, id: string, before: string[], result: CliResult }> {
  const result = await ok(args, env)
  const all = lines(result.stdout)
  const key = all.at(-1) ?? ''
  assert.match(key, KEY_PATTERN, show(result))
  assert.equal(all.filter((line) => line.includes(key)).length, 1, `the key is printed once\n${show(result)}`)
  const before = all.slice(0, -1)
  const id = before.map((line) => NEW_KEY_ID.exec(line)?.[1]).find((found) => found !== undefined)
  assert.ok(id, `the output names the new key's id\n${show(result)}`)
  return { key, id, before, result }
}

/** Runs the CLI with its standard output a pipe whose reading end is closed before it prints anything. */
async function intoClosedPipe (args: string[], env: Record<string, string>): Promise<CliResult> {
  const child = spawn(process.execPath, [CLI_PATH, ...args], { env, stdio: ['ignore', 'pipe', 'pipe'] })
  child.stdout.destroy()
  let stderr = ''
  child.stderr.setEncoding('utf8').on('data', (chunk: string) => { stderr += chunk })
  const [code] = await once(child, 'close') as [number | null]
  return { code, stdout: '', stderr }
}

/** `command | head -1`: prints the command's first line, closes the pipe, and says how the command exited. */
const HEAD_ONE = `
const child = require('node:child_process').spawn(process.execPath, process.argv.slice(1), { stdio: ['ignore', 'pipe', 'inherit'] })
require('node:readline').createInterface({ input: child.stdout }).once('line', (line) => { console.log(line); child.stdout.destroy() })
child.on('close', (code) => console.log('exit ' + code))
`

async function listKeys (env: Record<string, string>): Promise<KeyJson[]> {
  const result = await ok(['keys', 'list', '--email', EMAIL, '--json'], env)
  return JSON.parse(result.stdout) as KeyJson[]
}

/** The row of `keys list --json` output that shows the key (by its prefix). */
function rowOf (rows: KeyJson[], key: string): KeyJson {
  const row = rows.find((entry) => entry.prefix === key.slice(0, 12))
  assert.ok(row, `no key with the prefix ${key.slice(0, 12)}`)
  return row
}

async function keyRow (env: Record<string, string>, key: string): Promise<KeyJson> {
  return rowOf(await listKeys(env), key)
}

/** Whether the store takes the key as live now: what the servers' verifier looks up. */
async function storeSaysLive (store: Store, key: string): Promise<boolean> {
  return (await store.apiKeys.findByHash(hashApiKey(key)))?.live === true
}

async function statusFor (baseUrl: string, key: string): Promise<number> {
  const response = await fetch(`${baseUrl}/v1/pets`, { headers: { authorization: `Bearer ${key}` } })
  await response.arrayBuffer()
  return response.status
}

// Every test has a database of its own, so they need not wait for each other: the suites run side by side, and the
// CLI processes they spawn keep both cores busy. Within a suite the tests take turns: more at a time would only
// stretch each test's wall time towards its deadline on a busy machine.
describe('key lifecycle', { concurrency: true }, () => {
  for (const engine of ENGINES) {
    describe(`key lifecycle in the CLI (${engine.name})`, { concurrency: 1 }, () => {
      test('keys create takes scopes and an expiry, says them before the key, and keys list --json shows them', { timeout: 120_000 }, async (t) => {
        const setup = await engine.setup(t)
        if (setup === undefined) return
        const { env, store } = setup
        await ok(['accounts', 'create', '--email', EMAIL], env)

        const startedAt = Date.now()
        const reader = await keyOf(['keys', 'create', '--email', EMAIL, '--label', 'reader', '--scopes', 'animals:read', '--expires-in', '90d'], env)
        const endedAt = Date.now()
        assert.ok(reader.before.includes('Scopes: animals:read'), show(reader.result))
        const expiresLine = reader.before.find((line) => line.startsWith('Expires: '))
        assert.match(expiresLine ?? '', /^Expires: \d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{3}Z \(in 90 days\)$/, show(reader.result))

        const writer = await keyOf(['keys', 'create', '--email', EMAIL, '--scopes', 'animals:write, animals:read', '--expires-at', '2036-01-31T18:00:00+01:00'], env)
        assert.ok(writer.before.includes('Scopes: animals:read,animals:write'), show(writer.result))
        assert.ok(writer.before.some((line) => line.startsWith('Expires: 2036-01-31T17:00:00.000Z (in ')), show(writer.result))

        const plain = await keyOf(['keys', 'create', '--email', EMAIL], env)
        assert.ok(plain.before.includes('Scopes: animals:read,animals:write'), show(plain.result))
        assert.ok(plain.before.includes('Expires: never'), show(plain.result))

        const listed = await ok(['keys', 'list', '--email', EMAIL, '--json'], env)
        for (const key of [reader.key, writer.key, plain.key]) assert.ok(!listed.stdout.includes(key), 'keys list never shows a secret')
        const keys = JSON.parse(listed.stdout) as KeyJson[]
        assert.equal(keys.length, 3)
        for (const entry of keys) {
          assert.deepEqual(Object.keys(entry).sort(), ['createdAt', 'expiresAt', 'id', 'label', 'lastUsedAt', 'mode', 'prefix', 'revokedAt', 'rolledTo', 'scopes', 'state'])
          assert.match(entry.createdAt, ISO)
          assert.equal(entry.rolledTo, null)
          assert.equal(entry.revokedAt, null)
          assert.equal(entry.state, 'live')
        }
        const [first, second, third] = keys
        assert.deepEqual([first?.label, first?.prefix, first?.scopes], ['reader', reader.key.slice(0, 12), ['animals:read']])
        const expiresAt = Date.parse(first?.expiresAt ?? '')
        assert.ok(expiresAt >= startedAt + 90 * DAY && expiresAt <= endedAt + 90 * DAY, `expiresAt ${first?.expiresAt} is not 90 days after the command`)
        assert.deepEqual([second?.prefix, second?.scopes, second?.expiresAt], [writer.key.slice(0, 12), ['animals:read', 'animals:write'], '2036-01-31T17:00:00.000Z'])
        assert.deepEqual([third?.prefix, third?.scopes, third?.expiresAt], [plain.key.slice(0, 12), ['animals:read', 'animals:write'], null])

        // The store holds the same terms: what every server enforces.
        const stored = await store.apiKeys.findByHash(hashApiKey(reader.key))
        assert.deepEqual(stored?.scopes, ['animals:read'])
        assert.equal(stored?.expiresAt?.toISOString(), first?.expiresAt)
      })

      test('keys roll: the old key keeps working on a running server for the grace period, and stops at once with --grace 0', { timeout: 120_000 }, async (t) => {
        const setup = await engine.setup(t)
        if (setup === undefined) return
        const { env, store } = setup
        await ok(['accounts', 'create', '--email', EMAIL], env)
        const first = await keyOf(['keys', 'create', '--email', EMAIL, '--label', 'deploy', '--scopes', 'animals:read'], env)
        const server = launchServer(t, env)
        const baseUrl = await server.listening
        assert.equal(await statusFor(baseUrl, first.key), 200)

        const rolledAt = Date.now()
        const second = await keyOf(['keys', 'roll', first.id], env)
        // One listing shows both keys: the old one and its replacement.
        const afterRoll = await listKeys(env)
        const oldRow = rowOf(afterRoll, first.key)
        const secondRow = rowOf(afterRoll, second.key)
        assert.deepEqual([oldRow.id, secondRow.id], [first.id, second.id], 'the ids the commands printed are the ids keys list shows')
        assert.match(second.before[0] ?? '', new RegExp(`^Rolled key ${first.id} \\(deploy\\): it keeps working until \\S+ \\(24 hours from now\\), beside its replacement\\.$`), show(second.result))
        assert.ok(second.before.includes(`New key ${secondRow.id} replaces it.`), show(second.result))
        assert.ok(second.before.includes('Scopes: animals:read'), 'the replacement has the scopes of the old key')
        assert.equal(oldRow.rolledTo, secondRow.id)
        assert.equal(oldRow.state, 'live')
        const graceEnd = Date.parse(oldRow.expiresAt ?? '')
        assert.ok(graceEnd >= rolledAt + DAY && graceEnd <= Date.now() + DAY, `the grace period ends at ${oldRow.expiresAt}, not 24 hours after the roll`)
        assert.ok(second.before[0]?.includes(oldRow.expiresAt ?? '-'), 'the output says until when the old key works')
        assert.deepEqual([secondRow.label, secondRow.scopes, secondRow.state, secondRow.expiresAt], ['deploy', ['animals:read'], 'live', null])
        // Both keys work during the grace period.
        assert.equal(await storeSaysLive(store, first.key), true)
        assert.equal(await statusFor(baseUrl, first.key), 200)
        assert.equal(await statusFor(baseUrl, second.key), 200)

        // A key in its grace period is not rolled again: its replacement is.
        await fails(['keys', 'roll', first.id], env, new RegExp(`^error: key ${first.id} was rolled already and is in its grace period: roll its replacement ${secondRow.id} instead`))

        const third = await keyOf(['keys', 'roll', secondRow.id, '--grace', '0'], env)
        assert.match(third.before[0] ?? '', new RegExp(`^Rolled key ${secondRow.id} \\(deploy\\): it stopped working at ${ISO.source.slice(1, -1)}; `), show(third.result))
        assert.equal(await storeSaysLive(store, second.key), false, 'the store refuses the old key as soon as the command exits')
        const ended = await keyRow(env, second.key)
        assert.equal(ended.state, 'expired')
        await eventually(async () => assert.equal(await statusOf(fetch(`${baseUrl}/v1/pets`, { headers: { authorization: `Bearer ${second.key}` } })), 401, 'the server refuses the key'), { timeout: 15_000, interval: 50 })
        assert.equal(await statusFor(baseUrl, third.key), 200)
        assert.equal(await statusFor(baseUrl, first.key), 200, 'the first key is still in its own grace period')

        const table = await ok(['keys', 'list', '--email', EMAIL], env)
        const [header, ...rows] = lines(table.stdout)
        for (const column of ['ID', 'LABEL', 'PREFIX', 'SCOPES', 'CREATED', 'EXPIRES', 'LAST USED', 'REVOKED', 'STATE']) assert.ok(header?.includes(column), `header lacks ${column}\n${show(table)}`)
        assert.match(rows.find((row) => row.startsWith(secondRow.id)) ?? '', new RegExp(`\\sanimals:read\\s.*\\sexpired, rolled to ${third.before[1]?.split(' ')[2] ?? '?'}$`), show(table))
        assert.match(rows.find((row) => row.startsWith(first.id)) ?? '', new RegExp(`\\slive, rolled to ${secondRow.id}$`), show(table))
        for (const key of [first.key, second.key, third.key]) assert.ok(!table.stdout.includes(key))
      })

      // A missing key id and a bad grace period are refused before the database is opened: the input checks below.
      test('keys roll refuses an unknown, revoked or expired key and a full account, with one line and exit 1', { timeout: 120_000 }, async (t) => {
        const setup = await engine.setup(t)
        if (setup === undefined) return
        const { env, store } = setup
        await ok(['accounts', 'create', '--email', EMAIL], env)
        await fails(['keys', 'roll', 'key_AAAAAAAAAAAAAAAA'], env, /^error: no key has the id key_AAAAAAAAAAAAAAAA$/)
        await fails(['keys', 'roll', 'not-a-key'], env, /^error: no key has the id not-a-key$/)

        const revoked = await keyOf(['keys', 'create', '--email', EMAIL], env)
        await ok(['keys', 'revoke', revoked.id], env)
        await fails(['keys', 'roll', revoked.id], env, new RegExp(`^error: key ${revoked.id} is revoked already: there is nothing to roll; create a new key instead$`))

        const ended = await keyOf(['keys', 'create', '--email', EMAIL], env)
        const replacement = await keyOf(['keys', 'roll', ended.id, '--grace', '0'], env)
        await fails(['keys', 'roll', ended.id], env, new RegExp(`^error: key ${ended.id} is expired already: there is nothing to roll; create a new key instead$`))

        const live = await keyOf(['keys', 'create', '--email', EMAIL], env)
        const listed = await listKeys(env)
        assert.deepEqual(listed.map(({ id, state, rolledTo }) => ({ id, state, rolledTo })), [
          { id: revoked.id, state: 'revoked', rolledTo: null },
          { id: ended.id, state: 'expired', rolledTo: replacement.id },
          { id: replacement.id, state: 'live', rolledTo: null },
          { id: live.id, state: 'live', rolledTo: null }
        ])

        // Fill the account up to the cap: a roll needs room for the replacement while the old key lives on.
        const account = await store.accounts.findByEmail(EMAIL)
        assert.ok(account)
        const liveNow = listed.filter((entry) => entry.state === 'live').length
        for (let index = liveNow; index < MAX_LIVE_KEYS; index++) {
          const generated = generateApiKey()
          await store.apiKeys.create({ id: newKeyId(), accountId: account.id, label: null, prefix: generated.prefix, hash: generated.hash }, { maxLive: MAX_LIVE_KEYS })
        }
        await fails(['keys', 'roll', live.id], env, /^error: the account has 100 live keys, the most an account may have \(a rolled key counts until its grace period ends\); revoke one it no longer uses first$/)
        assert.equal(await storeSaysLive(store, live.key), true)
        assert.equal((await keyRow(env, live.key)).rolledTo, null)
      })

      test('keys create and keys roll into a closed pipe: exit 1, one line, no stack trace, and the unprinted key is revoked; | head -1 is no failure', { timeout: 120_000 }, async (t) => {
        const setup = await engine.setup(t)
        if (setup === undefined) return
        const { env } = setup
        await ok(['accounts', 'create', '--email', EMAIL], env)

        const created = await intoClosedPipe(['keys', 'create', '--email', EMAIL, '--label', 'lost'], env)
        assert.equal(created.code, 1, show(created))
        assert.match(created.stderr, /^error: standard output was closed before the new key key_\w+ was printed: the key is revoked; run the command again\n$/, show(created))
        assert.deepEqual((await listKeys(env)).map(({ label, state }) => ({ label, state })), [{ label: 'lost', state: 'revoked' }])

        const keptId = (await keyOf(['keys', 'create', '--email', EMAIL, '--label', 'kept'], env)).id
        const rolled = await intoClosedPipe(['keys', 'roll', keptId], env)
        assert.equal(rolled.code, 1, show(rolled))
        assert.match(rolled.stderr, new RegExp(`^error: standard output was closed before the new key key_\\w+ was printed: the key is revoked; generate a new one with animal-store keys create \\(${keptId} works until `), show(rolled))
        assert.deepEqual((await listKeys(env)).filter(({ label }) => label === 'kept').map(({ state }) => state).sort(), ['live', 'revoked'])

        const head = await runNode(['-e', HEAD_ONE, CLI_PATH, 'keys', 'create', '--email', EMAIL, '--label', 'head'], env)
        assert.equal(head.code, 0, show(head))
        assert.match(head.stdout, /^Created key key_\w+ \(head\) for ops@example\.com\.\nexit 0\n$/, show(head))
        assert.equal(head.stderr, '', show(head))
        assert.equal((await listKeys(env)).find(({ label }) => label === 'head')?.state, 'live')
      })

      test('keys usage prints per-day totals by outcome and totals by operation, and the same numbers as JSON', { timeout: 120_000 }, async (t) => {
        const setup = await engine.setup(t)
        if (setup === undefined) return
        const { env, store } = setup
        await ok(['accounts', 'create', '--email', EMAIL], env)
        const metered = await keyOf(['keys', 'create', '--email', EMAIL, '--label', 'metered'], env)
        const other = await keyOf(['keys', 'create', '--email', EMAIL], env)

        const thisHour = Date.now() - (Date.now() % HOUR)
        // Hours well inside the 30-day window (the command runs a moment later, maybe in the next hour),
        // one 40 days back (inside --days 90 only) and one for another key.
        const at = (ms: number): Date => new Date(ms)
        const counts: UsageCount[] = [
          { keyId: metered.id, hour: at(thisHour), operation: 'listPets', outcome: '2xx', count: 7 },
          { keyId: metered.id, hour: at(thisHour), operation: 'getPet', outcome: '4xx', count: 2 },
          { keyId: metered.id, hour: at(thisHour - 1 * DAY), operation: 'listPets', outcome: '2xx', count: 5 },
          { keyId: metered.id, hour: at(thisHour - 1 * DAY), operation: 'createPet', outcome: '5xx', count: 1 },
          { keyId: metered.id, hour: at(thisHour - 3 * DAY - 2 * HOUR), operation: 'other', outcome: '4xx', count: 4 },
          { keyId: metered.id, hour: at(thisHour - 3 * DAY - 2 * HOUR), operation: 'listPets', outcome: '2xx', count: 10 },
          { keyId: metered.id, hour: at(thisHour - 40 * DAY), operation: 'getPet', outcome: '2xx', count: 100 },
          { keyId: other.id, hour: at(thisHour), operation: 'listPets', outcome: '2xx', count: 1000 }
        ]
        await store.keyUsage.add(counts)
        // Added again: stored counts sum, as when several instances flush.
        await store.keyUsage.add([{ keyId: metered.id, hour: at(thisHour), operation: 'listPets', outcome: '2xx', count: 3 }])

        const dayOf = (ms: number): string => new Date(ms).toISOString().slice(0, 10)
        const expectedDaily = [
          { day: dayOf(thisHour - 3 * DAY - 2 * HOUR), '2xx': 10, '4xx': 4, '5xx': 0, total: 14 },
          { day: dayOf(thisHour - 1 * DAY), '2xx': 5, '4xx': 0, '5xx': 1, total: 6 },
          { day: dayOf(thisHour), '2xx': 10, '4xx': 2, '5xx': 0, total: 12 }
        ]
        const result = await ok(['keys', 'usage', metered.id, '--json'], env)
        const usage = JSON.parse(result.stdout) as UsageJson
        assert.equal(usage.keyId, metered.id)
        assert.equal(usage.days, 30)
        assert.match(usage.since, ISO)
        assert.match(usage.until, ISO)
        const sinceMs = Date.parse(usage.since)
        assert.equal(sinceMs % HOUR, 0, 'the window starts at an hour')
        assert.ok(Date.parse(usage.until) - sinceMs > 30 * DAY - HOUR && Date.parse(usage.until) - sinceMs <= 30 * DAY, `${usage.since} to ${usage.until} is not 30 days`)
        assert.deepEqual(usage.totals, { '2xx': 25, '4xx': 6, '5xx': 1, total: 32 })
        assert.deepEqual(usage.daily, expectedDaily)
        assert.deepEqual(usage.operations, [
          { operation: 'listPets', '2xx': 25, '4xx': 0, '5xx': 0, total: 25 },
          { operation: 'other', '2xx': 0, '4xx': 4, '5xx': 0, total: 4 },
          { operation: 'getPet', '2xx': 0, '4xx': 2, '5xx': 0, total: 2 },
          { operation: 'createPet', '2xx': 0, '4xx': 0, '5xx': 1, total: 1 }
        ])
        assert.deepEqual(usage.hourly, [
          { hour: at(thisHour - 3 * DAY - 2 * HOUR).toISOString(), operation: 'listPets', outcome: '2xx', count: 10 },
          { hour: at(thisHour - 3 * DAY - 2 * HOUR).toISOString(), operation: 'other', outcome: '4xx', count: 4 },
          { hour: at(thisHour - 1 * DAY).toISOString(), operation: 'createPet', outcome: '5xx', count: 1 },
          { hour: at(thisHour - 1 * DAY).toISOString(), operation: 'listPets', outcome: '2xx', count: 5 },
          { hour: at(thisHour).toISOString(), operation: 'getPet', outcome: '4xx', count: 2 },
          { hour: at(thisHour).toISOString(), operation: 'listPets', outcome: '2xx', count: 10 }
        ])

        const text = await ok(['keys', 'usage', metered.id], env)
        const printed = lines(text.stdout)
        assert.match(printed[0] ?? '', new RegExp(`^Requests of key ${metered.id} \\(metered\\) in the last 30 days, since ${ISO.source.slice(1, -1)}:$`), show(text))
        const cells = (line: string | undefined): string[] => (line ?? '').trim().split(/\s+/)
        const dayHeader = printed.findIndex((line) => line.startsWith('DAY (UTC)'))
        assert.deepEqual(cells(printed[dayHeader]), ['DAY', '(UTC)', '2XX', '4XX', '5XX', 'TOTAL'], show(text))
        assert.deepEqual(printed.slice(dayHeader + 1, dayHeader + 5).map(cells), [
          ...expectedDaily.map((day) => [day.day, String(day['2xx']), String(day['4xx']), String(day['5xx']), String(day.total)]),
          ['total', '25', '6', '1', '32']
        ], show(text))
        const operationHeader = printed.findIndex((line) => line.startsWith('OPERATION'))
        assert.deepEqual(printed.slice(operationHeader + 1, operationHeader + 6).map(cells), [
          ['listPets', '25', '0', '0', '25'],
          ['other', '0', '4', '0', '4'],
          ['getPet', '0', '2', '0', '2'],
          ['createPet', '0', '0', '1', '1'],
          ['total', '25', '6', '1', '32']
        ], show(text))

        const longer = JSON.parse((await ok(['keys', 'usage', metered.id, '--days', '90', '--json'], env)).stdout) as UsageJson
        assert.deepEqual(longer.totals, { '2xx': 125, '4xx': 6, '5xx': 1, total: 132 })
        assert.deepEqual(longer.daily[0], { day: dayOf(thisHour - 40 * DAY), '2xx': 100, '4xx': 0, '5xx': 0, total: 100 })
        const shorter = JSON.parse((await ok(['keys', 'usage', metered.id, '--days', '2', '--json'], env)).stdout) as UsageJson
        assert.equal(shorter.totals.total, 18, 'two days hold this hour and the one a day ago')

        const quiet = await keyOf(['keys', 'create', '--email', EMAIL], env)
        assert.deepEqual(lines((await ok(['keys', 'usage', quiet.id], env)).stdout).at(-1), 'none.')
        const none = JSON.parse((await ok(['keys', 'usage', quiet.id, '--json'], env)).stdout) as UsageJson
        assert.deepEqual([none.totals, none.daily, none.operations, none.hourly], [{ '2xx': 0, '4xx': 0, '5xx': 0, total: 0 }, [], [], []])

        await fails(['keys', 'usage', 'key_AAAAAAAAAAAAAAAA'], env, /^error: no key has the id key_AAAAAAAAAAAAAAAA$/)
      })

      test('audit lists the account\'s events newest first, actor cli, with no secret in them', { timeout: 120_000 }, async (t) => {
        const setup = await engine.setup(t)
        if (setup === undefined) return
        const { env } = setup
        const startedAt = Date.now()
        await ok(['accounts', 'create', '--email', EMAIL], env)
        await ok(['accounts', 'create', '--email', 'someone-else@example.com'], env)
        const created = await keyOf(['keys', 'create', '--email', EMAIL, '--scopes', 'animals:read', '--expires-in', '30d'], env)
        const rolled = await keyOf(['keys', 'roll', created.id, '--grace', '1h'], env)
        await ok(['keys', 'revoke', rolled.id], env)
        await keyOf(['keys', 'create', '--email', 'someone-else@example.com'], env)

        const result = await ok(['audit', '--email', EMAIL, '--json'], env)
        for (const key of [created.key, rolled.key]) {
          assert.ok(!result.stdout.includes(key) && !result.stdout.includes(key.slice(12)), 'no secret in the audit trail')
        }
        const events = JSON.parse(result.stdout) as AuditJson[]
        assert.deepEqual(events.map((event) => [event.event, event.keyId]), [
          ['key_revoked', rolled.id],
          ['key_rolled', created.id],
          ['key_created', created.id],
          ['account_created', null]
        ])
        for (const event of events) {
          assert.deepEqual(Object.keys(event).sort(), ['actor', 'address', 'at', 'detail', 'event', 'id', 'keyId'])
          assert.equal(event.actor, 'cli')
          assert.equal(event.address, null)
          assert.match(event.at, ISO)
          assert.ok(Date.parse(event.at) >= startedAt - 1000 && Date.parse(event.at) <= Date.now())
        }
        for (let index = 1; index < events.length; index++) {
          assert.ok((events[index - 1]?.id ?? 0) > (events[index]?.id ?? 0), 'newest first')
          assert.ok(Date.parse(events[index - 1]?.at ?? '') >= Date.parse(events[index]?.at ?? ''), 'newest first')
        }
        assert.match(events[1]?.detail ?? '', new RegExp(`^replaced by ${rolled.id}; works until `))
        assert.match(events[2]?.detail ?? '', /^scopes animals:read; expires /)

        const table = await ok(['audit', '--email', EMAIL], env)
        const [header, ...rows] = lines(table.stdout)
        assert.deepEqual(header?.split(/\s{2,}/), ['ID', 'TIME', 'EVENT', 'ACTOR', 'ADDRESS', 'KEY', 'DETAIL'])
        assert.equal(rows.length, 4, show(table))
        assert.match(rows[0] ?? '', new RegExp(`^${events[0]?.id}\\s+${events[0]?.at}\\s+key_revoked\\s+cli\\s+-\\s+${rolled.id}$`), show(table))
        assert.match(rows[3] ?? '', /\saccount_created\s+cli\s+-\s+-$/, show(table))

        const page = await ok(['audit', '--email', EMAIL, '--limit', '2'], env)
        const pageLines = lines(page.stdout)
        assert.equal(pageLines.length, 4, show(page))
        assert.equal(pageLines.at(-1), `Older events may follow: animal-store audit --email ${EMAIL} --before ${events[1]?.id} --limit 2`)
        const older = JSON.parse((await ok(['audit', '--email', EMAIL, '--json', '--limit', '2', '--before', String(events[1]?.id)], env)).stdout) as AuditJson[]
        assert.deepEqual(older, events.slice(2))

        await fails(['audit', '--email', 'ghost@example.com'], env, /^error: no account has the email ghost@example\.com: create it with animal-store accounts create --email ghost@example\.com$/)
      })
    })
  }

  // Refusals of options that the commands check before they open the database: the engine plays no part in them.
  describe('key lifecycle input checks', { concurrency: 1 }, () => {
    test('keys create refuses bad scopes, durations and times with one line and exit 1, and makes no key', { timeout: 120_000 }, async (t) => {
      const env = cliEnv(join(tempDir(t), 'animal-store.sqlite'))
      await ok(['accounts', 'create', '--email', EMAIL], env)
      const create = (...args: string[]): string[] => ['keys', 'create', '--email', EMAIL, ...args]
      const refusals: Array<[string[], RegExp]> = [
        [create('--scopes', 'animals:delete'), /^error: unknown scope "animals:delete": the scopes are animals:read, animals:write$/],
        [create('--scopes', 'read'), /^error: unknown scope "read"/],
        [create('--scopes', ' , '), /^error: give at least one scope: animals:read, animals:write$/],
        [create('--expires-in', '5x'), /^error: the expiry: "5x" is not a duration: write a number and a unit, as in 30m, 12h or 90d/],
        [create('--expires-in', 'tomorrow'), /^error: the expiry: "tomorrow" is not a duration/],
        [create('--expires-in=-1d'), /^error: the expiry: "-1d" is not a duration/],
        [create('--expires-in', '0'), /^error: the expiry must be in the future/],
        [create('--expires-in', '5000d'), /^error: the expiry: "5000d" is longer than ten years$/],
        [create('--expires-at', '2036-01-31'), /^error: "2036-01-31" is not an ISO 8601 time with a zone, such as 2027-01-31T18:00:00Z$/],
        [create('--expires-at', '2036-01-31T18:00:00'), /^error: "2036-01-31T18:00:00" is not an ISO 8601 time with a zone/],
        [create('--expires-at', 'next week'), /^error: "next week" is not an ISO 8601 time with a zone/],
        [create('--expires-at', '2020-01-01T00:00:00Z'), /^error: the expiry 2020-01-01T00:00:00\.000Z is not in the future$/],
        [create('--expires-at', '2030-02-30T00:00:00Z'), /^error: "2030-02-30T00:00:00Z" is not an ISO 8601 time with a zone/],
        [create('--expires-at', '2029-02-29T12:00:00Z'), /^error: "2029-02-29T12:00:00Z" is not an ISO 8601 time with a zone/],
        [create('--expires-at', '2030-01-01T24:00:00Z'), /^error: "2030-01-01T24:00:00Z" is not an ISO 8601 time with a zone/],
        [create('--expires-at', '2099-01-01T00:00:00Z'), /^error: the expiry is more than ten years away$/],
        [create('--expires-in', '30d', '--expires-at', '2036-01-31T18:00:00Z'), /^error: give an expiry as a duration or as a time, not both$/],
        [create('--expires-in'), /^error: Option '--expires-in <value>' argument missing \(usage: animal-store keys create /],
        [create('--scope', 'animals:read'), /^error: Unknown option '--scope'.* \(usage: animal-store keys create .*; more with --help\)$/]
      ]
      for (const [args, message] of refusals) await fails(args, env, message)
      assert.deepEqual(await listKeys(env), [], 'no refused command made a key')
    })

    test('keys roll, keys usage and audit refuse a missing key id or email and bad options with one line and exit 1, and roll no key', { timeout: 120_000 }, async (t) => {
      const env = cliEnv(join(tempDir(t), 'animal-store.sqlite'))
      await ok(['accounts', 'create', '--email', EMAIL], env)
      const live = await keyOf(['keys', 'create', '--email', EMAIL], env)
      await fails(['keys', 'roll'], env, /^error: give exactly one key id, as in: animal-store keys roll key_…$/)
      for (const grace of ['soon', '5x', '-1h', '12', '99999w']) {
        await fails(['keys', 'roll', live.id, `--grace=${grace}`], env, /^error: the grace period: /)
      }
      for (const days of ['0', '91', 'x', '1.5', '-3']) await fails(['keys', 'usage', live.id, `--days=${days}`], env, /^error: --days must be a whole number from 1 to 90, not /)
      for (const limit of ['0', '1001', 'all']) await fails(['audit', '--email', EMAIL, '--limit', limit], env, /^error: --limit must be a whole number from 1 to 1000, not /)
      await fails(['audit'], env, /^error: --email is required$/)
      assert.deepEqual((await listKeys(env)).map(({ id, state, rolledTo }) => ({ id, state, rolledTo })), [{ id: live.id, state: 'live', rolledTo: null }], 'a refused roll changes nothing')
    })
  })
})
