/**
 * npm run attack: replays, against the built server, every case of the outside attack that
 * hardened the service, on SQLite and (when it answers) on PostgreSQL, and prints one table:
 * engine, case, expected, observed. Exits 1 when any observed answer differs from the expected one.
 *
 * For each engine it starts `node dist/cli/main.js serve` on a free port (a temporary SQLite
 * file; a PostgreSQL schema of its own, dropped afterwards), with TRUST_PROXY=loopback so that a
 * case can speak from many client addresses through X-Forwarded-For, and a second instance on
 * the same database for the cases that need two. Cases are objects in CASES: each says what it
 * reproduces and expects, runs against a Target, and returns what it observed and whether that
 * is what was expected. Add a case by adding an object.
 *
 * Environment: ATTACK_POSTGRES_URL (default TEST_POSTGRES_URL, or postgres://postgres@127.0.0.1:5432/test),
 * ATTACK_ONLY (a substring of the case names to run), ATTACK_CLI (the built CLI to attack; dist/cli/main.js).
 */
import { spawn, type ChildProcess } from 'node:child_process'
import { randomBytes } from 'node:crypto'
import { once } from 'node:events'
import { mkdtempSync, rmSync } from 'node:fs'
import { request as httpRequest } from 'node:http'
import { connect as connectSocket, createServer, type AddressInfo } from 'node:net'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { createInterface } from 'node:readline'
import Database from 'better-sqlite3'
import { Secret, TOTP } from 'otpauth'
import pg from 'pg'
import { generateApiKey, MAX_LIVE_KEYS, newKeyId } from '../src/core/api-keys.js'
import { MAX_PET_ID } from '../src/core/pets.js'
import { createAccount, createApiKey } from '../src/services/accounts.js'
import { openPostgresStore } from '../src/storage/postgres/postgres-store.js'
import { openSqliteStore } from '../src/storage/sqlite/sqlite-store.js'
import type { Store } from '../src/storage/store.js'
import { Browser, floodSignUps, messageOf, patientLogIn, type Answer } from '../test/helpers/portal-browser.js'

const root = join(import.meta.dirname, '..')
const CLI = process.env.ATTACK_CLI ?? join(root, 'dist', 'cli', 'main.js')
const POSTGRES_URL = process.env.ATTACK_POSTGRES_URL ?? process.env.TEST_POSTGRES_URL ?? 'postgres://postgres@127.0.0.1:5432/test'
const PASSWORD = 'correct horse battery staple'
const METRICS_TOKEN = randomBytes(16).toString('hex')

// ---------------------------------------------------------------------------------------
// What a case runs against

interface Server { child: ChildProcess, baseUrl: string }

export interface Target {
  engine: 'sqlite' | 'postgres'
  /** The instance most cases attack. */
  baseUrl: string
  /** A second instance on the same database. */
  otherUrl: string
  /** GET here with `metricsAuth` gives the first instance's Prometheus text. */
  metricsUrl: (baseUrl: string) => string
  metricsAuth: Record<string, string>
  databaseUrl: string
  /** A store of the script's own on the same database, for setting up what a case needs. */
  store: Store
  /** Runs the built CLI on the same database, with an optional standard input. */
  cli: (args: string[], stdin?: string) => Promise<{ code: number | null, stdout: string, stderr: string }>
}

export interface AttackCase {
  /** The finding it replays, as the hardening issue numbers them. */
  item: string
  name: string
  expected: string
  run: (target: Target) => Promise<{ observed: string, ok: boolean }>
}

async function freePort (): Promise<number> {
  const server = createServer()
  server.listen(0, '127.0.0.1')
  await once(server, 'listening')
  const { port } = server.address() as AddressInfo
  server.close()
  await once(server, 'close')
  return port
}

/** A server on the database; its log lines (at LOG_LEVEL `logLevel`) go to `onLine`. */
async function startServer (databaseUrl: string, { logLevel = 'warn', onLine = () => {} }: { logLevel?: string, onLine?: (line: string) => void } = {}): Promise<Server> {
  const port = await freePort()
  const child = spawn(process.execPath, [CLI, 'serve'], {
    env: { ...process.env, DATABASE_URL: databaseUrl, HOST: '127.0.0.1', PORT: String(port), LOG_LEVEL: logLevel, TRUST_PROXY: 'loopback', METRICS_TOKEN },
    stdio: ['ignore', 'pipe', 'inherit']
  })
  createInterface({ input: child.stdout }).on('line', onLine)
  const baseUrl = `http://127.0.0.1:${port}`
  const deadline = Date.now() + 30_000
  for (;;) {
    if (child.exitCode !== null) throw new Error(`the server exited with ${child.exitCode}`)
    try {
      if ((await fetch(`${baseUrl}/healthz`)).ok) return { child, baseUrl }
    } catch {}
    if (Date.now() > deadline) throw new Error(`${baseUrl} did not answer within 30 s`)
    await new Promise((resolve) => setTimeout(resolve, 50))
  }
}

async function stopServer (server: Server): Promise<void> {
  if (server.child.exitCode !== null || server.child.signalCode !== null) return
  server.child.kill('SIGTERM')
  await once(server.child, 'exit')
}

function cliRunner (databaseUrl: string): Target['cli'] {
  return async (args, stdin) => {
    const child = spawn(process.execPath, [CLI, ...args], { env: { PATH: process.env.PATH ?? '', DATABASE_URL: databaseUrl, LOG_LEVEL: 'warn' }, stdio: ['pipe', 'pipe', 'pipe'] })
    let stdout = ''
    let stderr = ''
    child.stdout.setEncoding('utf8').on('data', (chunk: string) => { stdout += chunk })
    child.stderr.setEncoding('utf8').on('data', (chunk: string) => { stderr += chunk })
    child.stdin.end(stdin ?? '')
    const [code] = await once(child, 'close') as [number | null]
    return { code, stdout, stderr }
  }
}

/** Whether the answer is one of the portal's HTML pages. */
const isHtml = (answer: Answer): boolean => /^text\/html/.test(answer.headers.get('content-type') ?? '')
const unique = (prefix: string): string => `${prefix}-${randomBytes(4).toString('hex')}@attack.example`
/** A fresh block of client addresses for one case, so no case is throttled by another. */
let nextBlock = 1
const addresses = (): ((n: number) => string) => {
  const block = nextBlock++
  return (n) => `10.${block}.${Math.floor(n / 250)}.${(n % 250) + 1}`
}

/** The path of the link in the newest message of that kind to the email, read from the outbox (waiting for it to be written). */
async function mailedLink (target: Target, email: string, kind: string): Promise<string> {
  const deadline = Date.now() + 10_000
  for (;;) {
    const mail = (await target.store.mailOutbox.list({ pendingOnly: false, limit: 200 })).find((row) => row.recipient === email && row.kind === kind)
    if (mail !== undefined) return new URL(mail.link).pathname + new URL(mail.link).search
    if (Date.now() > deadline) throw new Error(`no ${kind} message to ${email} within 10 s`)
    await new Promise((resolve) => setTimeout(resolve, 50))
  }
}

/**
 * Signs up, follows the mailed verification link, and logs in (a sign-up no longer signs in:
 * it answers "check your email" whatever the email), so that the account may generate keys.
 */
async function signedUp (target: Target, email: string, address: string): Promise<Browser> {
  const browser = new Browser(target.baseUrl, address)
  const answer = await browser.submit('/portal/signup', '/portal/signup', { email, password: PASSWORD })
  if (answer.status !== 200) throw new Error(`sign-up of ${email} answered ${answer.status}: ${messageOf(answer.body)}`)
  const verified = await browser.get(await mailedLink(target, email, 'verify_email'))
  if (verified.status !== 200) throw new Error(`the verification link of ${email} answered ${verified.status}`)
  const loggedIn = await browser.submit('/portal/login', '/portal/login', { email, password: PASSWORD })
  if (loggedIn.status !== 303) throw new Error(`the log-in of ${email} after its sign-up answered ${loggedIn.status}: ${messageOf(loggedIn.body)}`)
  return browser
}

/** The code an authenticator app holding the secret shows for the TOTP time step. */
const totpCode = (secret: string, step: number): string =>
  new TOTP({ secret: Secret.fromBase32(secret), digits: 6, period: 30, algorithm: 'SHA1' }).generate({ timestamp: step * 30_000 + 1000 })
const totpStepNow = (): number => Math.floor(Date.now() / 30_000)

/**
 * A fresh account with two-step verification on, confirmed with the previous step's code so the
 * current and next steps are left to the case; with its secret and recovery codes.
 */
async function withTwoStep (target: Target, email: string, address: string): Promise<{ secret: string, recoveryCodes: string[] }> {
  const browser = await signedUp(target, email, address)
  await browser.submit('/portal/two-step', '/portal/two-step/setup', {})
  const setup = await browser.get('/portal/two-step/setup')
  const secret = (/<code id="totp-secret">([A-Z2-7 ]+)<\/code>/.exec(setup.body)?.[1] ?? '').replaceAll(' ', '')
  const token = /<input type="hidden" name="_csrf" value="([^"]+)">/.exec(setup.body)?.[1] ?? ''
  for (let tries = 0; tries < 3; tries++) {
    const confirmed = await browser.post('/portal/two-step/confirm', { _csrf: token, code: totpCode(secret, totpStepNow() - 1) })
    const recoveryCodes = [...confirmed.body.matchAll(/<li><code>([a-z2-7]{5}-[a-z2-7]{5})<\/code><\/li>/g)].map((match) => match[1] ?? '')
    if (confirmed.status === 200) return { secret, recoveryCodes }
  }
  throw new Error(`two-step verification of ${email} could not be turned on`)
}

/** A browser that has passed the password step for the email (it holds the pending log-in), on the given instance. */
async function pastPassword (baseUrl: string, email: string, address: string): Promise<Browser> {
  const browser = new Browser(baseUrl, address)
  const answer = await browser.submit('/portal/login', '/portal/login', { email, password: PASSWORD })
  if (answer.headers.get('location') !== '/portal/login/code') throw new Error(`the password step of ${email} answered ${answer.status} ${answer.headers.get('location') ?? ''}`)
  return browser
}

const codeAnswer = async (browser: Browser, code: string): Promise<Answer> => await browser.submit('/portal/login/code', '/portal/login/code', { code })

/** The answer of a portal page without what differs between two answers to the same form: the email typed and the form's token. */
const pageShape = (answer: Answer, email: string): string =>
  `${answer.status} ${answer.body.replaceAll(email, 'EMAIL').replace(/name="_csrf" value="[^"]+"/g, '')}`

function tally (statuses: number[]): string {
  const counts = new Map<number, number>()
  for (const status of statuses) counts.set(status, (counts.get(status) ?? 0) + 1)
  return [...counts].sort(([a], [b]) => a - b).map(([status, count]) => `${status}×${count}`).join(' ')
}

/** The text of /metrics as rendered now: a scrape within a second of the previous one gets that one's text. */
const lastScrape = new Map<string, number>()
async function freshMetrics (target: Target, baseUrl: string): Promise<Response> {
  const wait = 1100 - (performance.now() - (lastScrape.get(baseUrl) ?? -Infinity))
  if (wait > 0) await new Promise((resolve) => setTimeout(resolve, wait))
  const response = await fetch(target.metricsUrl(baseUrl), { headers: target.metricsAuth })
  lastScrape.set(baseUrl, performance.now())
  return response
}

async function cacheMisses (target: Target, baseUrl: string): Promise<number | undefined> {
  const response = await freshMetrics(target, baseUrl)
  const match = /^api_key_cache_lookups_total\{result="miss"\} (\d+)$/m.exec(await response.text())
  return response.ok && match !== null ? Number(match[1]) : undefined
}

async function liveKeys (target: Target, email: string): Promise<number> {
  const account = await target.store.accounts.findByEmail(email)
  return (await target.store.apiKeys.pageByAccount(account?.id ?? 0, { live: true, limit: 1, offset: 0 })).total
}

async function addKeys (target: Target, email: string, count: number): Promise<string[]> {
  const account = await target.store.accounts.findByEmail(email)
  if (account === undefined) throw new Error(`no account ${email}`)
  const ids: string[] = []
  for (let index = 0; index < count; index++) {
    const generated = generateApiKey()
    ids.push((await target.store.apiKeys.create({ id: newKeyId(), accountId: account.id, label: `filler ${index}`, prefix: generated.prefix, hash: generated.hash }, { maxLive: MAX_LIVE_KEYS })).id)
  }
  return ids
}

/** The status, whether it is a page, and whether its message names `field`. */
function refusal (answer: Answer, field: string): string {
  return `${answer.status}${isHtml(answer) ? ' page' : ' not a page'}${new RegExp(`^The ${field} must not contain (control|bidirectional formatting) characters`).test(messageOf(answer.body)) ? `, names the ${field}` : `: ${messageOf(answer.body) || answer.body.slice(0, 80)}`}`
}

/** An API key of a fresh account, for the cases that call the API. */
async function apiKey (target: Target): Promise<string> {
  const email = unique('api')
  await createAccount(target.store, { email })
  return (await createApiKey(target.store, { email })).key
}

/** Writes raw bytes on a new connection; resolves with what came back once `done` says so, or the connection closed, or the deadline. */
async function rawExchange (baseUrl: string, request: string, done: (received: string) => boolean, deadlineMs = 5000): Promise<{ received: string, closed: boolean, ms: number }> {
  const { port } = new URL(baseUrl)
  const started = performance.now()
  const socket = connectSocket(Number(port), '127.0.0.1')
  socket.on('error', () => {})
  let received = ''
  let closed = false
  await once(socket, 'connect')
  return await new Promise((resolve) => {
    const finish = (): void => {
      clearTimeout(timer)
      socket.destroy()
      resolve({ received, closed, ms: performance.now() - started })
    }
    const timer = setTimeout(finish, deadlineMs)
    socket.setEncoding('latin1').on('data', (chunk: string) => {
      received += chunk
      if (done(received)) finish()
    })
    socket.on('close', () => { closed = true; finish() })
    // Written byte for byte: a case may hold bytes that are not text (a byte-order mark).
    socket.write(request, 'latin1')
  })
}

const statusOf = (received: string): string => /^HTTP\/1\.1 (\d{3})/.exec(received)?.[1] ?? 'no answer'

/** Keyed list requests answered in `ms` by `clients` concurrent clients. */
async function keyedRate (baseUrl: string, key: string, ms: number, clients = 4): Promise<{ rate: number, statuses: number[] }> {
  const statuses: number[] = []
  const until = performance.now() + ms
  await Promise.all(Array.from({ length: clients }, async () => {
    while (performance.now() < until) {
      const response = await fetch(`${baseUrl}/v1/pets?limit=5`, { headers: { authorization: `Bearer ${key}` } })
      await response.arrayBuffer()
      statuses.push(response.status)
    }
  }))
  return { rate: statuses.length * 1000 / ms, statuses }
}

/** A database of the engine's own, migrated, for a case that must leave the shared one as it is. */
async function freshDatabase (engine: Target['engine']): Promise<{ url: string, store: Store, drop: () => Promise<void> }> {
  let url: string
  let remove: () => Promise<void>
  if (engine === 'sqlite') {
    const dir = mkdtempSync(join(tmpdir(), 'animal-store-attack-case-'))
    url = `sqlite:${join(dir, 'animal-store.sqlite')}`
    remove = async () => { rmSync(dir, { recursive: true, force: true }) }
  } else {
    const schema = await postgresSchema()
    if (schema === undefined) throw new Error('PostgreSQL does not answer')
    url = schema.url
    remove = schema.drop
  }
  const store = engine === 'sqlite' ? openSqliteStore(url.slice('sqlite:'.length)) : openPostgresStore(url, { poolSize: 2, onError: () => {} })
  await store.migrate()
  return { url, store, drop: async () => { await store.close(); await remove() } }
}

/** Writes an animal with this id by hand, as a restore could; on PostgreSQL the id counter moves to it, as the store moves it. */
async function petRowWithId (engine: Target['engine'], url: string, id: bigint): Promise<void> {
  if (engine === 'sqlite') {
    const db = new Database(url.slice('sqlite:'.length))
    db.prepare('INSERT INTO pets (id, name, category_id, created_at) VALUES (?, \'by hand\', 1, 0)').run(id)
    db.close()
    return
  }
  const client = new pg.Client({ connectionString: url })
  await client.connect()
  await client.query('INSERT INTO pets (id, name, category_id, created_at) VALUES ($1, \'by hand\', 1, 0)', [id.toString()])
  await client.query('UPDATE counters SET value = $1 WHERE name = \'pet_ids\'', [id.toString()])
  await client.end()
}

// ---------------------------------------------------------------------------------------
// The cases

/** Issue 42: single-use mailed links, and the mail forms that must not tell whether an email has an account. */
const MAIL_CASES: AttackCase[] = [
  {
    item: '42.1',
    name: 'verification link replayed, and tampered with one character',
    expected: 'first use 200; replay 410; tampered 410; cut short 400',
    run: async (target) => {
      const email = unique('verify')
      const browser = new Browser(target.baseUrl, addresses()(1))
      await browser.submit('/portal/signup', '/portal/signup', { email, password: PASSWORD })
      const link = await mailedLink(target, email, 'verify_email')
      const first = (await browser.get(link)).status
      const replay = (await browser.get(link)).status
      const tampered = (await browser.get(link.replace(/.$/, (last) => (last === 'A' ? 'B' : 'A')))).status
      const short = (await browser.get(link.slice(0, -5))).status
      const observed = `first use ${first}; replay ${replay}; tampered ${tampered}; cut short ${short}`
      return { observed, ok: observed === 'first use 200; replay 410; tampered 410; cut short 400' }
    }
  },
  {
    item: '42.2',
    name: 'password reset link used twice, and a forged token posted to /portal/reset',
    expected: 'reset 303; the same link again 410; a forged token 410; the second password never set',
    run: async (target) => {
      const email = unique('reset')
      const at = addresses()
      await signedUp(target, email, at(0))
      const asker = new Browser(target.baseUrl, at(1))
      await asker.submit('/portal/forgot', '/portal/forgot', { email })
      const link = await mailedLink(target, email, 'reset_password')
      const token = new URL(link, target.baseUrl).searchParams.get('token') ?? ''
      const reset = (await asker.submit(link, '/portal/reset', { token, password: 'first new long passphrase' })).status
      const again = (await asker.submit('/portal/forgot', '/portal/reset', { token, password: 'second new long passphrase' })).status
      const forged = (await asker.submit('/portal/forgot', '/portal/reset', { token: token.replace(/^./, (first) => (first === 'A' ? 'B' : 'A')), password: 'third new long passphrase' })).status
      const second = await new Browser(target.baseUrl, at(2)).submit('/portal/login', '/portal/login', { email, password: 'second new long passphrase' })
      const observed = `reset ${reset}; the same link again ${again}; a forged token ${forged}; the second password ${second.status === 303 ? 'set' : 'never set'}`
      return { observed, ok: observed === 'reset 303; the same link again 410; a forged token 410; the second password never set' }
    }
  },
  {
    item: '42.3',
    name: 'email enumeration through forgot-password: an account\'s email and an unknown one, answered alike; only the account gets a link',
    expected: 'same status and page; a link for the account only',
    run: async (target) => {
      const known = unique('known')
      const at = addresses()
      await signedUp(target, known, at(0))
      const unknown = unique('unknown')
      const one = await new Browser(target.baseUrl, at(1)).submit('/portal/forgot', '/portal/forgot', { email: known })
      const other = await new Browser(target.baseUrl, at(2)).submit('/portal/forgot', '/portal/forgot', { email: unknown })
      await mailedLink(target, known, 'reset_password')
      const rows = await target.store.mailOutbox.list({ pendingOnly: false, limit: 500 })
      const same = pageShape(one, known) === pageShape(other, unknown)
      const observed = `${same ? 'same status and page' : `answers differ (${one.status} vs ${other.status})`}; ${rows.some((row) => row.recipient === unknown) ? 'a message to the unknown email' : 'a link for the account only'}`
      return { observed, ok: observed === 'same status and page; a link for the account only' }
    }
  },
  {
    item: '42.4',
    name: 'email enumeration through the forgot-password throttle and the resend form',
    expected: 'an unknown email throttled like a known one: 200 200 200 429 both; resend names no email: 303 to log-in without a session',
    run: async (target) => {
      const known = unique('throttle')
      const at = addresses()
      await signedUp(target, known, at(0))
      const statuses = async (email: string, offset: number): Promise<string> => {
        const result: number[] = []
        for (let index = 0; index < 4; index++) result.push((await new Browser(target.baseUrl, at(offset + index)).submit('/portal/forgot', '/portal/forgot', { email })).status)
        return result.join(' ')
      }
      const knownStatuses = await statuses(known, 10)
      const unknownStatuses = await statuses(unique('nobody'), 20)
      const resend = await new Browser(target.baseUrl, at(30)).post('/portal/keys/verification', { email: known })
      const throttle = knownStatuses === unknownStatuses ? `an unknown email throttled like a known one: ${knownStatuses} both` : `known ${knownStatuses}, unknown ${unknownStatuses}`
      const observed = `${throttle}; resend names no email: ${resend.status} to ${resend.headers.get('location') === '/portal/login' ? 'log-in' : resend.headers.get('location') ?? '-'} without a session`
      return { observed, ok: observed === 'an unknown email throttled like a known one: 200 200 200 429 both; resend names no email: 303 to log-in without a session' }
    }
  },
  {
    item: '42.5',
    name: 'email enumeration through sign-up: an account\'s email and an unknown one, answered alike; no second account, the owner told',
    expected: 'same status, page and cookies; the owner told once, the new email sent a link; the first password still logs in, the second not',
    run: async (target) => {
      const known = unique('signed')
      const at = addresses()
      await signedUp(target, known, at(0))
      const unknown = unique('newcomer')
      const one = await new Browser(target.baseUrl, at(1)).submit('/portal/signup', '/portal/signup', { email: known, password: 'a second long passphrase' })
      const other = await new Browser(target.baseUrl, at(2)).submit('/portal/signup', '/portal/signup', { email: unknown, password: 'a second long passphrase' })
      const cookies = (answer: Answer): string => answer.headers.getSetCookie().map((line) => line.replace(/=[^;]*/, '=')).join(' | ')
      const same = pageShape(one, known) === pageShape(other, unknown) && cookies(one) === cookies(other)
      await mailedLink(target, known, 'sign_up_existing')
      await mailedLink(target, unknown, 'verify_email')
      const rows = await target.store.mailOutbox.list({ pendingOnly: false, limit: 500 })
      const told = rows.filter((row) => row.recipient === known && row.kind === 'sign_up_existing').length
      const links = rows.filter((row) => row.recipient === known && row.kind === 'verify_email').length
      const first = (await new Browser(target.baseUrl, at(3)).submit('/portal/login', '/portal/login', { email: known, password: PASSWORD })).status
      const second = (await new Browser(target.baseUrl, at(4)).submit('/portal/login', '/portal/login', { email: known, password: 'a second long passphrase' })).status
      const observed = `${same ? 'same status, page and cookies' : `answers differ (${one.status} vs ${other.status})`}; ` +
        `${told === 1 && links === 1 ? 'the owner told once' : `the owner got ${told} notices and ${links} links`}, the new email sent a link; ` +
        `the first password ${first === 303 ? 'still logs in' : `answers ${first}`}, the second ${second === 401 ? 'not' : `answers ${second}`}`
      return { observed, ok: observed === 'same status, page and cookies; the owner told once, the new email sent a link; the first password still logs in, the second not' }
    }
  }
]

export const CASES: AttackCase[] = [
  // 2. A NUL byte was a 500 on PostgreSQL.
  ...(['/portal/login', '/portal/signup'] as const).map((path): AttackCase => ({
    item: '2',
    name: `email=a%00b%40x.io on POST ${path}`,
    expected: '400 page, names the email address',
    run: async (target) => {
      const answer = await new Browser(target.baseUrl, addresses()(1)).submit(path, path, { email: 'a\u0000b@x.io', password: PASSWORD })
      const observed = refusal(answer, 'email address')
      return { observed, ok: observed === '400 page, names the email address' }
    }
  })),
  {
    item: '2',
    name: 'a NUL in the password on POST /portal/login',
    expected: '400 page, names the password',
    run: async (target) => {
      const answer = await new Browser(target.baseUrl, addresses()(1)).submit('/portal/login', '/portal/login', { email: 'someone@attack.example', password: `pass\u0000${PASSWORD}` })
      const observed = refusal(answer, 'password')
      return { observed, ok: observed === '400 page, names the password' }
    }
  },
  {
    item: '2',
    name: 'a key label with %00 on POST /portal/keys',
    expected: '400 page, names the label; no key',
    run: async (target) => {
      const email = unique('label')
      const browser = await signedUp(target, email, addresses()(1))
      const answer = await browser.submit('/portal/keys', '/portal/keys', { label: 'lap\u0000top' })
      const observed = `${refusal(answer, 'label')}${await liveKeys(target, email) === 0 ? '; no key' : '; a key was made'}`
      return { observed, ok: observed === '400 page, names the label; no key' }
    }
  },
  {
    item: '2',
    name: 'CLI: accounts create --email with U+0001, set-password with a NUL on stdin',
    expected: 'exit 1 naming the email address; exit 1 naming the password',
    run: async (target) => {
      const email = unique('cli')
      const created = await target.cli(['accounts', 'create', '--email', 'a\u0001b@attack.example'])
      await target.cli(['accounts', 'create', '--email', email])
      const password = await target.cli(['accounts', 'set-password', '--email', email], 'a long pass\u0000phrase\n')
      const describe = (result: { code: number | null, stderr: string }, field: string): string =>
        `exit ${String(result.code)}${result.stderr.includes(`The ${field} must not contain control characters`) ? ` naming the ${field}` : `: ${result.stderr.trim().slice(0, 80)}`}`
      const observed = `${describe(created, 'email address')}; ${describe(password, 'password')}`
      return { observed, ok: observed === 'exit 1 naming the email address; exit 1 naming the password' }
    }
  },

  // 3. Anyone could lock any account.
  {
    item: '3',
    name: "10 wrong log-ins for a victim's email from 10 addresses, then the victim's own browser",
    expected: 'victim logs in (303)',
    run: async (target) => {
      const at = addresses()
      const email = unique('victim')
      const victim = await signedUp(target, email, at(0))
      victim.cookies.delete('portal_session')
      for (let n = 1; n <= 10; n++) await new Browser(target.baseUrl, at(n)).submit('/portal/login', '/portal/login', { email, password: `wrong ${n}` })
      const answer = await victim.submit('/portal/login', '/portal/login', { email, password: PASSWORD })
      return { observed: answer.status === 303 ? 'victim logs in (303)' : `${answer.status}: ${messageOf(answer.body)}`, ok: answer.status === 303 }
    }
  },
  {
    item: '3',
    name: '…and an attacker from a new address, even with the right password',
    expected: '429 with Retry-After',
    run: async (target) => {
      const at = addresses()
      const email = unique('locked')
      await signedUp(target, email, at(0))
      for (let n = 1; n <= 10; n++) await new Browser(target.baseUrl, at(n)).submit('/portal/login', '/portal/login', { email, password: `wrong ${n}` })
      const answer = await new Browser(target.baseUrl, at(99)).submit('/portal/login', '/portal/login', { email, password: PASSWORD })
      const observed = `${answer.status}${answer.headers.get('retry-after') === null ? '' : ' with Retry-After'}`
      return { observed, ok: observed === '429 with Retry-After' }
    }
  },

  // 4. One client address could make everyone wait.
  {
    item: '4',
    name: '135 concurrent log-ins from 3 addresses, and an honest log-in from a fresh one',
    expected: 'no 503; 429 with Retry-After beyond one per address; honest 303 within 3 s',
    run: async (target) => {
      const at = addresses()
      const email = unique('honest')
      const honest = await signedUp(target, email, at(0))
      honest.cookies.delete('portal_session')
      const attackers = [1, 2, 3].map((n) => new Browser(target.baseUrl, at(n)))
      const tokens = await Promise.all(attackers.map(async (attacker) => await attacker.token('/portal/login')))
      const honestToken = await honest.token('/portal/login')
      const attacks = attackers.flatMap((attacker, index) => Array.from({ length: 45 }, async (_, n) =>
        await attacker.post('/portal/login', { _csrf: tokens[index] ?? '', email: `guess${n}@attack.example`, password: 'not the password' })))
      const started = performance.now()
      const answer = await honest.post('/portal/login', { _csrf: honestToken, email, password: PASSWORD })
      const waited = (performance.now() - started) / 1000
      const answers = await Promise.all(attacks)
      const statuses = answers.map((item) => item.status)
      const withoutRetryAfter = answers.filter((item) => item.status === 429 && item.headers.get('retry-after') === null).length
      const observed = `${tally(statuses)}; 429 without Retry-After: ${withoutRetryAfter}; honest ${answer.status} in ${waited.toFixed(1)} s`
      return { observed, ok: !statuses.some((status) => status >= 500) && withoutRetryAfter === 0 && answer.status === 303 && waited < 3 }
    }
  },

  // Issue 39, 7. Tampered portal forms failed open: a field sent twice, or a choice the form does not offer.
  ...([
    ['expires_in sent twice (7d, never) on POST /portal/keys', { expires_in: ['7d', 'never'], label: 'twice' }],
    ['expires_in=1s on POST /portal/keys', { expires_in: '1s', label: 'second' }],
    ['expires_in=3650d on POST /portal/keys', { expires_in: '3650d', label: 'decade' }],
    ['a label sent twice on POST /portal/keys', { expires_in: 'never', label: ['one', 'two'] }]
  ] as const).map(([name, fields]): AttackCase => ({
    item: '39.7',
    name,
    expected: '400 page; no key',
    run: async (target) => {
      const email = unique('tamper')
      const browser = await signedUp(target, email, addresses()(1))
      const answer = await browser.submit('/portal/keys', '/portal/keys', { scopes: 'animals:read', ...fields })
      const observed = `${answer.status}${isHtml(answer) ? ' page' : ' not a page'}; ${await liveKeys(target, email) === 0 ? 'no key' : 'a key was made'}`
      return { observed, ok: observed === '400 page; no key' }
    }
  })),
  ...([
    ['grace=3650d on POST /portal/keys/:id/roll', { grace: '3650d' }],
    ['grace sent twice (7d, 0) on POST /portal/keys/:id/roll', { grace: ['7d', '0'] }]
  ] as const).map(([name, fields]): AttackCase => ({
    item: '39.7',
    name,
    expected: '400 page; not rolled',
    run: async (target) => {
      const email = unique('tamper')
      const browser = await signedUp(target, email, addresses()(1))
      const [id = ''] = await addKeys(target, email, 1)
      const answer = await browser.submit(`/portal/keys/${id}/roll`, `/portal/keys/${id}/roll`, fields)
      const rolled = (await target.store.apiKeys.findById(id))?.rolledTo !== null
      const observed = `${answer.status}${isHtml(answer) ? ' page' : ' not a page'}; ${rolled ? 'rolled' : 'not rolled'}`
      return { observed, ok: observed === '400 page; not rolled' }
    }
  })),

  // 5. The key cap was a race on PostgreSQL; revoked keys piled up.
  {
    item: '5',
    name: '300 concurrent key creations in the portal on an account with 80 live keys',
    expected: '100 live keys: the cap reached, never passed',
    run: async (target) => {
      const email = unique('cap')
      const browser = await signedUp(target, email, addresses()(1))
      await addKeys(target, email, 80)
      const token = await browser.token('/portal/keys', '/portal/keys')
      const answers = await Promise.all(Array.from({ length: 300 }, async (_, n) => await browser.post('/portal/keys', { _csrf: token, label: `burst ${n}`, scopes: 'animals:read' })))
      const live = await liveKeys(target, email)
      return { observed: `${live} live keys (${tally(answers.map((item) => item.status))})`, ok: live === 100 && !answers.some((item) => item.status >= 500) }
    }
  },
  {
    item: '5',
    name: 'the keys page of an account with 301 keys, 290 of them revoked',
    expected: 'under 64 KB',
    run: async (target) => {
      const email = unique('pile')
      const browser = await signedUp(target, email, addresses()(1))
      // Keys made and revoked in turns, within the cap of 100 live ones: 301 in all, 290 revoked.
      const live = await addKeys(target, email, 100)
      let total = 100
      let revoked = 0
      while (total < 301) {
        const batch = live.splice(0, Math.min(97, 290 - revoked))
        for (const id of batch) await target.store.apiKeys.revoke(id)
        revoked += batch.length
        const added = Math.min(batch.length, 301 - total)
        live.push(...await addKeys(target, email, added))
        total += added
      }
      const page = await browser.get('/portal/keys')
      const size = Buffer.byteLength(page.body)
      return { observed: `${page.status}, ${(size / 1024).toFixed(1)} KB`, ok: page.status === 200 && size < 64 * 1024 }
    }
  },
  {
    item: '5',
    name: 'a 31st key generation within the hour, in the portal and with the CLI',
    expected: 'portal 429 with Retry-After; CLI exit 1',
    run: async (target) => {
      const email = unique('rate')
      const browser = await signedUp(target, email, addresses()(1))
      const token = await browser.token('/portal/keys', '/portal/keys')
      let last: Answer | undefined
      for (let n = 0; n < 31; n++) last = await browser.post('/portal/keys', { _csrf: token, label: `k${n}`, scopes: 'animals:read' })
      const cli = await target.cli(['keys', 'create', '--email', email])
      const observed = `portal ${last?.status ?? '?'}${last?.headers.get('retry-after') === null ? '' : ' with Retry-After'}; CLI exit ${String(cli.code)}`
      return { observed, ok: observed === 'portal 429 with Retry-After; CLI exit 1' }
    }
  },

  // 6. Revocations reset every verified key.
  {
    item: '6',
    name: 'a key revoked with the CLI, read on another instance; meanwhile 20 revocations of another account',
    expected: '401 within 1 s; the other key: 0 cache misses',
    run: async (target) => {
      const readerEmail = unique('reader')
      const churnEmail = unique('churn')
      await createAccount(target.store, { email: readerEmail })
      await createAccount(target.store, { email: churnEmail })
      const kept = await createApiKey(target.store, { email: readerEmail })
      const doomed = await createApiKey(target.store, { email: readerEmail })
      const read = async (key: string): Promise<number> => (await fetch(`${target.otherUrl}/v1/pets?limit=20`, { headers: { authorization: `Bearer ${key}` } })).status
      await read(kept.key)
      await read(doomed.key)
      const before = await cacheMisses(target, target.otherUrl)
      const churn = await addKeys(target, churnEmail, 20)
      for (const id of churn) await target.store.apiKeys.revoke(id)
      const revoked = await target.cli(['keys', 'revoke', doomed.row.id])
      const revokedAt = performance.now()
      let status = await read(doomed.key)
      while (status === 200 && performance.now() - revokedAt < 3000) {
        await new Promise((resolve) => setTimeout(resolve, 20))
        status = await read(doomed.key)
      }
      const refusedAfter = performance.now() - revokedAt
      for (let n = 0; n < 20; n++) await read(kept.key)
      const after = await cacheMisses(target, target.otherUrl)
      // The revoked key's own reads after its revocation are misses; the kept key's must not be.
      const keptMisses = before === undefined || after === undefined ? undefined : after - before - 1
      const observed = `${status} after ${Math.round(refusedAfter)} ms (CLI exit ${String(revoked.code)}); the other key: ${keptMisses === undefined ? 'metrics unreadable' : `${keptMisses} cache misses`}`
      return { observed, ok: status === 401 && refusedAfter < 1000 && keptMisses === 0 }
    }
  },

  // 9. A /portal error was the API's JSON.
  ...([
    ['a JSON body posted to /portal/login', { 'content-type': 'application/json' }, '{"email":"a@b.io"}', '415 page'],
    ['a text/plain body posted to /portal/login', { 'content-type': 'text/plain' }, 'email=a@b.io', '415 page'],
    ['a gzip-encoded form posted to /portal/login', { 'content-type': 'application/x-www-form-urlencoded', 'content-encoding': 'gzip' }, 'a=b', '415 page'],
    ['a 20 KB form posted to /portal/login', { 'content-type': 'application/x-www-form-urlencoded' }, `email=${'a'.repeat(20_000)}`, '413 page']
  ] as const).map(([name, headers, body, expected]): AttackCase => ({
    item: '9',
    name,
    expected,
    run: async (target) => {
      const response = await fetch(`${target.baseUrl}/portal/login`, { method: 'POST', headers, body })
      const observed = `${response.status}${/^text\/html/.test(response.headers.get('content-type') ?? '') ? ' page' : ` ${response.headers.get('content-type') ?? ''}`}`
      await response.arrayBuffer()
      return { observed, ok: observed === expected }
    }
  })),
  {
    item: '9',
    name: 'a 3,000-character path segment under /portal',
    expected: '404 page',
    run: async (target) => {
      const response = await fetch(`${target.baseUrl}/portal/keys/${'k'.repeat(3000)}/revoke`)
      const observed = `${response.status}${/^text\/html/.test(response.headers.get('content-type') ?? '') ? ' page' : ` ${response.headers.get('content-type') ?? ''}`}`
      await response.arrayBuffer()
      return { observed, ok: observed === '404 page' }
    }
  },
  {
    item: '9',
    name: 'a Content-Length of 1,000,000 on /portal/login, body never sent',
    expected: '413 page',
    run: async (target) => {
      const observed = await new Promise<string>((resolve, reject) => {
        const outgoing = httpRequest(`${target.baseUrl}/portal/login`, { method: 'POST', headers: { 'content-type': 'application/x-www-form-urlencoded', 'content-length': '1000000' } }, (response) => {
          response.resume()
          resolve(`${response.statusCode ?? 0}${/^text\/html/.test(String(response.headers['content-type'])) ? ' page' : ` ${String(response.headers['content-type'])}`}`)
          outgoing.destroy()
        })
        outgoing.on('error', (error) => { if (!outgoing.destroyed) reject(error) })
        outgoing.flushHeaders()
      })
      return { observed, ok: observed === '413 page' }
    }
  },
  // 1. /metrics was a CPU amplifier open to anyone.
  {
    item: '1',
    name: 'GET /metrics without the scrape token',
    expected: '401',
    run: async (target) => {
      const response = await fetch(target.metricsUrl(target.baseUrl))
      await response.arrayBuffer()
      return { observed: String(response.status), ok: response.status === 401 }
    }
  },
  {
    item: '1',
    name: '400 requests with 8 odd methods and 50 unknown paths: the request series they add',
    expected: 'at most 2 series',
    run: async (target) => {
      const key = await apiKey(target)
      const seriesOf = async (): Promise<number> => (await (await freshMetrics(target, target.baseUrl)).text()).split('\n').filter((line) => line.startsWith('http_requests_total{')).length
      const before = await seriesOf()
      const methods = ['PROPFIND', 'MKCOL', 'LOCK', 'UNLOCK', 'SEARCH', 'PURGE', 'REPORT', 'ACL']
      for (let index = 0; index < 400; index++) {
        await rawExchange(target.baseUrl, `${methods[index % 8] ?? 'GET'} /v1/nope-${index % 50} HTTP/1.1\r\nHost: x\r\nAuthorization: Bearer ${key}\r\n\r\n`, (received) => /\r\n\r\n/.test(received))
      }
      const added = await seriesOf() - before
      return { observed: `${added} series`, ok: added <= 2 }
    }
  },
  {
    item: '1',
    name: 'four clients scraping /metrics in a loop beside keyed clients, against four clients asking /healthz',
    expected: 'keyed reads at least 0.5× their rate beside /healthz',
    run: async (target) => {
      const key = await apiKey(target)
      // Four clients that take their share of the server, cheaply or not: only what a scrape costs beyond a cheap request shows.
      const beside = async (url: string, headers: Record<string, string>): Promise<{ rate: number, statuses: number[] }> => {
        const done = { now: false }
        const others = Array.from({ length: 4 }, async () => {
          while (!done.now) await (await fetch(url, { headers })).arrayBuffer()
        })
        const measured = await keyedRate(target.baseUrl, key, 1500)
        done.now = true
        await Promise.all(others)
        return measured
      }
      const cheap = await beside(`${target.baseUrl}/healthz`, {})
      const scraped = await beside(target.metricsUrl(target.baseUrl), target.metricsAuth)
      const ratio = scraped.rate / cheap.rate
      return { observed: `${ratio.toFixed(2)}× (${Math.round(scraped.rate)} against ${Math.round(cheap.rate)} a second)`, ok: ratio >= 0.5 && scraped.statuses.every((status) => status === 200) }
    }
  },
  // 7. An unauthenticated upload was read to the end.
  {
    item: '7',
    name: 'POST /v1/pets without a key, Content-Length 1,000,000,000, 64 KB sent',
    expected: '401, Connection: close, closed by the server within 2 s',
    run: async (target) => {
      const head = 'POST /v1/pets HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\nContent-Length: 1000000000\r\n\r\n'
      const { received, closed, ms } = await rawExchange(target.baseUrl, head + ' '.repeat(65_536), () => false, 2000)
      const observed = `${statusOf(received)}${/\r\nconnection: close\r\n/i.test(received) ? ', Connection: close' : ''}${closed && ms < 2000 ? ', closed by the server' : ', left open'}`
      return { observed, ok: observed === '401, Connection: close, closed by the server' }
    }
  },
  {
    item: '7',
    name: 'POST /v1/pets without a key, with Expect: 100-continue',
    expected: '401 with no 100 Continue before it',
    run: async (target) => {
      const { received } = await rawExchange(target.baseUrl, 'POST /v1/pets HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\nContent-Length: 30\r\nExpect: 100-continue\r\n\r\n', (text) => /\r\n\r\n/.test(text))
      const observed = /^HTTP\/1\.1 100/.test(received) ? '100 Continue first' : `${statusOf(received)} with no 100 Continue before it`
      return { observed, ok: observed === '401 with no 100 Continue before it' }
    }
  },
  // Issue 39, finding 6: keys reached the log percent-encoded in a query, and sent as X-Request-Id.
  {
    item: '39.6',
    name: 'a key percent-encoded in a query, and a key sent as X-Request-Id, to a server logging at info',
    expected: 'X-Request-Id replaced, no log line holds the key',
    run: async (target) => {
      const lines: string[] = []
      const server = await startServer(target.databaseUrl, { logLevel: 'info', onLine: (line) => lines.push(line) })
      try {
        const key = await apiKey(target)
        const auth = { authorization: `Bearer ${key}` }
        await (await fetch(`${server.baseUrl}/v1/pets?k=${key.replace('_', '%5F')}`, { headers: auth })).arrayBuffer()
        const echo = await fetch(`${server.baseUrl}/v1/pets`, { headers: { ...auth, 'x-request-id': key } })
        await echo.arrayBuffer()
        const deadline = Date.now() + 5000
        while (lines.filter((line) => line.includes('"request completed"')).length < 2 && Date.now() < deadline) await new Promise((resolve) => setTimeout(resolve, 20))
        const replaced = echo.headers.get('x-request-id') !== key
        const logged = lines.some((line) => line.includes(key.slice(4)))
        const observed = `X-Request-Id ${replaced ? 'replaced' : 'echoed'}, ${logged ? 'a log line holds the key' : 'no log line holds the key'}`
        return { observed, ok: observed === 'X-Request-Id replaced, no log line holds the key' }
      } finally {
        await stopServer(server)
      }
    }
  },
  // Issue 39, finding 18: ids were computed through a double, so a catalogue at 2^53 handed out a duplicate.
  {
    item: '39.18',
    name: 'three creates after a row with id 2^53 − 3, then one after a row with id 2^53',
    expected: `201 id ${MAX_PET_ID - 1}, 201 id ${MAX_PET_ID}, 507; then 507`,
    run: async (target) => {
      const db = await freshDatabase(target.engine)
      const server = await startServer(db.url)
      try {
        const email = unique('ids')
        await createAccount(db.store, { email })
        const auth = { authorization: `Bearer ${(await createApiKey(db.store, { email })).key}`, 'content-type': 'application/json' }
        const create = async (): Promise<string> => {
          const response = await fetch(`${server.baseUrl}/v1/pets`, { method: 'POST', headers: auth, body: '{"name":"Rex","categoryId":1}' })
          const id = /^\{"id":(\d+)/.exec(await response.text())?.[1]
          return id === undefined ? `${response.status}` : `${response.status} id ${id}`
        }
        await petRowWithId(target.engine, db.url, BigInt(MAX_PET_ID) - 2n)
        const first = [await create(), await create(), await create()].join(', ')
        await petRowWithId(target.engine, db.url, BigInt(MAX_PET_ID) + 1n)
        const observed = `${first}; then ${await create()}`
        return { observed, ok: observed === `201 id ${MAX_PET_ID - 1}, 201 id ${MAX_PET_ID}, 507; then 507` }
      } finally {
        await stopServer(server)
        await db.drop()
      }
    }
  },
  // 9. Small answers that should be stricter.
  ...([
    ['two Authorization headers', (key: string) => `GET /v1/pets HTTP/1.1\r\nHost: x\r\nAuthorization: Bearer ${key}\r\nAuthorization: Bearer ask_other\r\n\r\n`, '400'],
    ['a Content-Type with two charset parameters', (key: string) => `POST /v1/pets HTTP/1.1\r\nHost: x\r\nAuthorization: Bearer ${key}\r\nContent-Type: application/json; charset=utf-8; charset=latin1\r\nContent-Length: 29\r\n\r\n{"name":"Rex","categoryId":1}`, '415'],
    // Issue 39, 4: a transfer coding other than chunked is not implemented (501), no longer a bare 400.
    ['Transfer-Encoding: gzip', (key: string) => `POST /v1/pets HTTP/1.1\r\nHost: x\r\nAuthorization: Bearer ${key}\r\nContent-Type: application/json\r\nTransfer-Encoding: gzip\r\n\r\n`, '501'],
    ['a categoryId of 1e18', (key: string) => `POST /v1/pets HTTP/1.1\r\nHost: x\r\nAuthorization: Bearer ${key}\r\nContent-Type: application/json\r\nContent-Length: 32\r\n\r\n{"name":"Rex","categoryId":1e18}`, '201'],
    ['a categoryId of 1e19 (beyond int64)', (key: string) => `POST /v1/pets HTTP/1.1\r\nHost: x\r\nAuthorization: Bearer ${key}\r\nContent-Type: application/json\r\nContent-Length: 32\r\n\r\n{"name":"Rex","categoryId":1e19}`, '400'],
    ['a body behind two byte-order marks', (key: string) => `POST /v1/pets HTTP/1.1\r\nHost: x\r\nAuthorization: Bearer ${key}\r\nContent-Type: application/json\r\nContent-Length: 35\r\n\r\n\u00ef\u00bb\u00bf\u00ef\u00bb\u00bf{"name":"Rex","categoryId":1}`, '400'],
    ['a 3,000-character petId', (key: string) => `GET /v1/pets/${'1'.repeat(3000)} HTTP/1.1\r\nHost: x\r\nAuthorization: Bearer ${key}\r\n\r\n`, '400']
  ] as const).map(([name, request, expected]): AttackCase => ({
    item: '9',
    name,
    expected,
    run: async (target) => {
      const { received } = await rawExchange(target.baseUrl, request(await apiKey(target)), (text) => /\r\n\r\n[\s\S]*[}\]]\s*$|^HTTP\/1\.1 \d{3}[^\r]*\r\n(?![\s\S]*content-length)/i.test(text))
      const status = statusOf(received)
      const body = received.split('\r\n\r\n')[1] ?? ''
      const named = /2048/.test(body) || !/petId/.test(name) ? '' : ': the message does not name the limit'
      return { observed: `${status}${named}${/invalid JSON|not valid JSON/.test(body) || !/byte-order/.test(name) ? '' : `: ${body.slice(0, 80)}`}`, ok: status === expected && named === '' && (!/byte-order/.test(name) || /not valid JSON/.test(body)) }
    }
  })),
  // Issue 39, 2. The password-hash queue could be starved by sign-ups retried at once on each 429.
  {
    item: '39.2',
    name: '24 addresses flooding POST /portal/signup, retrying at once on each 429; a person honouring Retry-After logs in twice',
    expected: 'both log in (303), each within 10 s; the flood refused, no 5xx',
    run: async (target) => {
      const at = addresses()
      const email = unique('patient')
      await signedUp(target, email, at(100))
      const stop = new AbortController()
      const flood = floodSignUps(target.baseUrl, Array.from({ length: 24 }, (_, n) => at(n)), PASSWORD, stop.signal)
      await Promise.race([flood.refused, flood.done])
      const person = new Browser(target.baseUrl, at(300))
      const results = []
      for (let attempt = 0; attempt < 2; attempt++) {
        person.cookies.delete('portal_session')
        results.push(await patientLogIn(person, email, PASSWORD, 10_000))
      }
      stop.abort()
      const statuses = await flood.done
      const observed = `${results.map(({ status, refusals, tookMs }) => `${status} after ${refusals} 429s in ${(tookMs / 1000).toFixed(1)} s`).join(', ')}; flood ${tally(statuses)}`
      return { observed, ok: results.every(({ status, tookMs }) => status === 303 && tookMs <= 10_000) && statuses.includes(429) && !statuses.some((status) => status >= 500) }
    }
  },

  // Issue 39, 1. A body nobody reads was read to the end, wherever the request landed but POST /v1/pets.
  ...([
    ...['GET /healthz', 'GET /readyz', 'GET /docs', 'GET /v1/openapi.json', 'GET /portal/login', 'GET /', 'POST /portal/nope']
      .map((request) => [`${request} without a key, Content-Length 1,000,000,000, 64 KB sent`, `${request} HTTP/1.1\r\nHost: x\r\nContent-Length: 1000000000\r\n\r\n`] as const),
    ['GET /healthz, chunked, a chunk of 1 GB begun', 'GET /healthz HTTP/1.1\r\nHost: x\r\nTransfer-Encoding: chunked\r\n\r\n3B9ACA00\r\n'] as const
  ]).map(([what, head]): AttackCase => ({
    item: '39.1',
    name: `a body nobody reads: ${what}`,
    expected: 'answered, Connection: close, closed by the server within 2 s',
    run: async (target) => {
      const { received, closed, ms } = await rawExchange(target.baseUrl, head + ' '.repeat(65_536), () => false, 2000)
      const observed = `${/^HTTP\/1\.1 [2-4]\d\d /.test(received) ? 'answered' : statusOf(received)}${/\r\nconnection: close\r\n/i.test(received) ? ', Connection: close' : ''}${closed && ms < 2000 ? ', closed by the server' : ', left open'}`
      return { observed, ok: observed === 'answered, Connection: close, closed by the server' }
    }
  })),

  // Issue 39, 4. Transfer codings and Content-Type fields the parser takes.
  ...([
    ['Transfer-Encoding: gzip, chunked on POST /v1/pets', (key: string) => `POST /v1/pets HTTP/1.1\r\nHost: x\r\nAuthorization: Bearer ${key}\r\nContent-Type: application/json\r\nTransfer-Encoding: gzip, chunked\r\n\r\n1d\r\n{"name":"Rex","categoryId":1}\r\n0\r\n\r\n`, '501 not_implemented'],
    ['two Content-Type headers on POST /v1/pets', (key: string) => `POST /v1/pets HTTP/1.1\r\nHost: x\r\nAuthorization: Bearer ${key}\r\nContent-Type: application/json\r\nContent-Type: text/plain\r\nContent-Length: 29\r\n\r\n{"name":"Rex","categoryId":1}`, '400 invalid_request']
  ] as const).map(([name, request, expected]): AttackCase => ({
    item: '39.4',
    name,
    expected,
    run: async (target) => {
      const { received } = await rawExchange(target.baseUrl, request(await apiKey(target)), (text) => /\r\n\r\n[\s\S]*\}$/.test(text))
      const observed = `${statusOf(received)} ${/"code":"([a-z_]+)"/.exec(received)?.[1] ?? 'without an error body'}`
      return { observed, ok: observed === expected }
    }
  })),

  // Issue 39, 3. What the HTTP parser refused got the framework's own body, and CONNECT no answer.
  ...([
    ['a lower-case method', 'get /healthz HTTP/1.1\r\nHost: x\r\n\r\n', '400 invalid_request'],
    ['a NUL before the method', '\u0000GET /healthz HTTP/1.1\r\nHost: x\r\n\r\n', '400 invalid_request'],
    ['a header name with a space', 'GET /healthz HTTP/1.1\r\nHost: x\r\nBad Name: y\r\n\r\n', '400 invalid_request'],
    ['an oversized header', `GET /healthz HTTP/1.1\r\nHost: x\r\nX-Big: ${'a'.repeat(20_000)}\r\n\r\n`, '431 header_fields_too_large'],
    ['CONNECT', 'CONNECT example.com:443 HTTP/1.1\r\nHost: example.com:443\r\n\r\n', '400 invalid_request']
  ] as const).map(([what, request, expected]): AttackCase => ({
    item: '39.3',
    name: `parser refusal: ${what}`,
    expected: `${expected}, Connection: close`,
    run: async (target) => {
      const { received } = await rawExchange(target.baseUrl, request, () => false, 2000)
      const observed = `${statusOf(received)} ${/^\{"code":"([a-z_]+)","message":"[^"]*","status":\d{3}\}$/m.exec(received)?.[1] ?? 'without an error body'}` +
        `${/\r\nconnection: close\r\n/i.test(received) ? ', Connection: close' : ''}`
      return { observed, ok: observed === `${expected}, Connection: close` }
    }
  })),

  // Issue 39, 5. TRUNCATE emptied the audit trail on PostgreSQL (SQLite's equivalent is a DELETE without WHERE).
  {
    item: '39.5',
    name: 'TRUNCATE audit_events (a bare DELETE on SQLite) with a direct connection',
    expected: 'refused as append-only; no event lost',
    run: async (target) => {
      await createAccount(target.store, { email: unique('audit') })
      const [refusal, left] = await emptyAuditTrail(target)
      const observed = `${refusal}; ${left} events left`
      return { observed, ok: /append-only/.test(refusal) && left > 0 }
    }
  },

  // Issue 39, 8. The CLI rolled an impossible date over, and died on EPIPE after making a key nobody saw.
  {
    item: '39.8',
    name: 'keys create --expires-at 2030-02-30T00:00:00Z',
    expected: 'exit 1, no key',
    run: async (target) => {
      const email = unique('date')
      await createAccount(target.store, { email })
      const result = await target.cli(['keys', 'create', '--email', email, '--expires-at', '2030-02-30T00:00:00Z'])
      const observed = `exit ${String(result.code)}, ${await liveKeys(target, email) === 0 ? 'no key' : 'a key made'}`
      return { observed, ok: observed === 'exit 1, no key' }
    }
  },
  {
    item: '39.8',
    name: 'keys create into a pipe closed before it prints',
    expected: 'exit 1, no stack trace, no live key',
    run: async (target) => {
      const email = unique('pipe')
      await createAccount(target.store, { email })
      const child = spawn(process.execPath, [CLI, 'keys', 'create', '--email', email], { env: { PATH: process.env.PATH ?? '', DATABASE_URL: target.databaseUrl, LOG_LEVEL: 'warn' }, stdio: ['ignore', 'pipe', 'pipe'] })
      child.stdout.destroy()
      let stderr = ''
      child.stderr.setEncoding('utf8').on('data', (chunk: string) => { stderr += chunk })
      const [code] = await once(child, 'close') as [number | null]
      const observed = `exit ${String(code)}, ${/\n\s+at /.test(stderr) ? 'a stack trace' : 'no stack trace'}, ${await liveKeys(target, email) === 0 ? 'no live key' : 'a live key nobody saw'}`
      return { observed, ok: observed === 'exit 1, no stack trace, no live key' }
    }
  },
  // Issue 39, 10. U+0085 and bidirectional controls were accepted in emails, labels and pet names.
  {
    item: '39.10',
    name: 'text rules: POST /v1/pets with U+0085, U+202E, U+2066 in the name; then a right-to-left name with U+200F',
    expected: '400 400 400 201',
    run: async (target) => {
      const key = await apiKey(target)
      const statuses: number[] = []
      for (const name of ['a\u0085b', '\u202eRex', '\u2066xoF\u2069', '\u05e8\u05e7\u05e1 2\u200f']) {
        const response = await fetch(`${target.baseUrl}/v1/pets`, { method: 'POST', headers: { authorization: `Bearer ${key}`, 'content-type': 'application/json' }, body: JSON.stringify({ name, categoryId: 1 }) })
        await response.arrayBuffer()
        statuses.push(response.status)
      }
      const observed = statuses.join(' ')
      return { observed, ok: observed === '400 400 400 201' }
    }
  },
  ...MAIL_CASES,
  ...([['U+202E', 'moc.elpmaxe@\u202enilla'], ['U+0085', 'alice@attack.example\u0085']] as const).map(([character, email]): AttackCase => ({
    item: '39.10',
    name: `text rules: sign-up with ${character} in the email`,
    expected: '400 page, names the email address',
    run: async (target) => {
      const answer = await new Browser(target.baseUrl, addresses()(1)).submit('/portal/signup', '/portal/signup', { email, password: PASSWORD })
      const observed = refusal(answer, 'email address')
      return { observed, ok: observed === '400 page, names the email address' }
    }
  })),
  {
    item: '39.10',
    name: 'text rules: key labels with U+202E, U+200E and U+0085 on POST /portal/keys and keys create --label',
    expected: '400 page, names the label ×3; CLI exit 1 ×3; no key',
    run: async (target) => {
      const email = unique('bidi')
      const browser = await signedUp(target, email, addresses()(1))
      const labels = ['prod\u202eved', 'ci\u200e', 'lap\u0085top']
      const pages: string[] = []
      const exits: Array<number | null> = []
      for (const label of labels) {
        pages.push(refusal(await browser.submit('/portal/keys', '/portal/keys', { label }), 'label'))
        exits.push((await target.cli(['keys', 'create', '--email', email, '--label', label])).code)
      }
      const allPages = pages.every((page) => page === '400 page, names the label') ? '400 page, names the label ×3' : pages.join(' | ')
      const observed = `${allPages}; CLI exit ${exits.every((code) => code === 1) ? '1 ×3' : exits.join(',')}; ${await liveKeys(target, email) === 0 ? 'no key' : 'a key was made'}`
      return { observed, ok: observed === '400 page, names the label ×3; CLI exit 1 ×3; no key' }
    }
  },
  // Issue 42, 4. Two-step verification: a stolen password alone must not open an account, nor a code seen once.
  {
    item: '42.t.1',
    name: 'two-step verification: an attacker with the password guesses codes from 20 addresses over both instances, then the owner types the right one',
    expected: '401×10 429×10, every 429 with Retry-After; the right code then 429 too; no session',
    run: async (target) => {
      const email = unique('totp-guess')
      const next = addresses()
      const { secret } = await withTwoStep(target, email, next(0))
      const attacker = await pastPassword(target.baseUrl, email, next(1))
      const window = [-1, 0, 1, 2].map((delta) => totpCode(secret, totpStepNow() + delta))
      const statuses: number[] = []
      let withRetryAfter = 0
      for (let guess = 0; guess < 20; guess++) {
        // The pending log-in travels with the attacker, from another address and instance each time.
        const elsewhere = new Browser(guess % 2 === 0 ? target.baseUrl : target.otherUrl, next(2 + guess))
        for (const [name, value] of attacker.cookies) elsewhere.cookies.set(name, value)
        const code = String(100000 + guess * 7919).slice(0, 6)
        const answer = await codeAnswer(elsewhere, window.includes(code) ? '999999' : code)
        statuses.push(answer.status)
        if (answer.status === 429 && Number(answer.headers.get('retry-after')) > 0) withRetryAfter++
      }
      const owner = await pastPassword(target.otherUrl, email, next(40))
      const right = await codeAnswer(owner, totpCode(secret, totpStepNow()))
      const observed = `${tally(statuses)}${withRetryAfter === statuses.filter((status) => status === 429).length ? ', every 429 with Retry-After' : ', a 429 without Retry-After'}; the right code then ${right.status}${right.status === 429 ? ' too' : ''}; ${owner.cookies.has('portal_session') || attacker.cookies.has('portal_session') ? 'a session' : 'no session'}`
      return { observed, ok: observed === '401×10 429×10, every 429 with Retry-After; the right code then 429 too; no session' }
    }
  },
  {
    item: '42.t.2',
    name: 'two-step verification: a code seen over the owner\'s shoulder, replayed at once on the other instance; then a recovery code used twice',
    expected: 'owner 303, replay 401; recovery code 303 then 401',
    run: async (target) => {
      const email = unique('totp-replay')
      const next = addresses()
      const { secret, recoveryCodes } = await withTwoStep(target, email, next(0))
      const code = totpCode(secret, totpStepNow())
      const owner = await codeAnswer(await pastPassword(target.baseUrl, email, next(1)), code)
      const replay = await codeAnswer(await pastPassword(target.otherUrl, email, next(2)), code)
      const [recovery = ''] = recoveryCodes
      const first = await codeAnswer(await pastPassword(target.baseUrl, email, next(3)), recovery)
      const again = await codeAnswer(await pastPassword(target.otherUrl, email, next(4)), recovery)
      const observed = `owner ${owner.status}, replay ${replay.status}; recovery code ${first.status} then ${again.status}`
      return { observed, ok: observed === 'owner 303, replay 401; recovery code 303 then 401' }
    }
  },
  {
    item: '42.t.3',
    name: 'two-step verification: the pending log-in cookie tampered with, or carried to another browser, with the right code',
    expected: 'tampered 303 to log-in, other browser 303 to log-in; no session',
    run: async (target) => {
      const email = unique('totp-cookie')
      const next = addresses()
      const { secret } = await withTwoStep(target, email, next(0))
      const victim = await pastPassword(target.baseUrl, email, next(1))
      const pending = victim.cookies.get('portal_second_step') ?? ''
      const tamperedBrowser = await pastPassword(target.baseUrl, email, next(2))
      tamperedBrowser.cookies.set('portal_second_step', pending.slice(0, 20) + (pending[20] === 'A' ? 'B' : 'A') + pending.slice(21))
      // Posted with the browser's own valid form token (from the log-in page): only the pending log-in is at fault.
      const posted = async (browser: Browser): Promise<Answer> =>
        await browser.post('/portal/login/code', { _csrf: await browser.token('/portal/login'), code: totpCode(secret, totpStepNow()) })
      const tampered = await posted(tamperedBrowser)
      const thief = new Browser(target.otherUrl, next(3))
      await thief.get('/portal/login')
      thief.cookies.set('portal_second_step', pending)
      const carried = await posted(thief)
      const where = (answer: Answer): string => `${answer.status}${(answer.headers.get('location') ?? '').startsWith('/portal/login?') ? ' to log-in' : ` ${answer.headers.get('location') ?? ''}`}`
      const observed = `tampered ${where(tampered)}, other browser ${where(carried)}; ${tamperedBrowser.cookies.has('portal_session') || thief.cookies.has('portal_session') ? 'a session' : 'no session'}`
      return { observed, ok: observed === 'tampered 303 to log-in, other browser 303 to log-in; no session' }
    }
  }
]

/** Tries to empty the audit trail behind the service's back; returns how that went and the events left. */
async function emptyAuditTrail (target: Target): Promise<[string, number]> {
  const attempt = async (run: () => Promise<unknown>): Promise<string> => {
    try {
      await run()
      return 'accepted'
    } catch (error) {
      return `refused: ${(error as Error).message}`
    }
  }
  if (target.engine === 'sqlite') {
    const db = new Database(target.databaseUrl.slice('sqlite:'.length))
    try {
      const refusal = await attempt(async () => db.prepare('DELETE FROM audit_events').run())
      return [refusal, Number(db.prepare('SELECT count(*) FROM audit_events').pluck().get())]
    } finally {
      db.close()
    }
  }
  const client = new pg.Client({ connectionString: target.databaseUrl })
  await client.connect()
  try {
    const refusal = await attempt(async () => await client.query('TRUNCATE audit_events'))
    return [refusal, (await client.query<{ n: number }>('SELECT count(*)::int AS n FROM audit_events')).rows[0]?.n ?? 0]
  } finally {
    await client.end()
  }
}

// ---------------------------------------------------------------------------------------
// Running every case on every engine

interface Row { engine: string, item: string, name: string, expected: string, observed: string, ok: boolean }

async function postgresSchema (): Promise<{ url: string, drop: () => Promise<void> } | undefined> {
  const admin = new pg.Client({ connectionString: POSTGRES_URL, connectionTimeoutMillis: 3000 })
  try {
    await admin.connect()
  } catch (error) {
    console.error(`PostgreSQL at ${POSTGRES_URL} does not answer (${(error as Error).message}): SQLite only`)
    return undefined
  }
  const schema = `attack_${randomBytes(6).toString('hex')}`
  await admin.query(`CREATE SCHEMA ${schema}`)
  await admin.end()
  const url = new URL(POSTGRES_URL)
  url.searchParams.set('options', `-c search_path=${schema}`)
  return {
    url: url.toString(),
    drop: async () => {
      const client = new pg.Client({ connectionString: POSTGRES_URL })
      await client.connect()
      await client.query(`DROP SCHEMA IF EXISTS ${schema} CASCADE`)
      await client.end()
    }
  }
}

async function attack (engine: Target['engine'], databaseUrl: string, cases: AttackCase[]): Promise<Row[]> {
  const store = engine === 'sqlite' ? openSqliteStore(databaseUrl.slice('sqlite:'.length)) : openPostgresStore(databaseUrl, { poolSize: 4, onError: () => {} })
  await store.migrate()
  const first = await startServer(databaseUrl)
  const second = await startServer(databaseUrl)
  const target: Target = {
    engine,
    baseUrl: first.baseUrl,
    otherUrl: second.baseUrl,
    metricsUrl: (baseUrl) => `${baseUrl}/metrics`,
    metricsAuth: { authorization: `Bearer ${METRICS_TOKEN}` },
    databaseUrl,
    store,
    cli: cliRunner(databaseUrl)
  }
  const rows: Row[] = []
  try {
    for (const item of cases) {
      let result: { observed: string, ok: boolean }
      try {
        result = await item.run(target)
      } catch (error) {
        result = { observed: `failed: ${(error as Error).message}`, ok: false }
      }
      rows.push({ engine, item: item.item, name: item.name, expected: item.expected, ...result })
      console.error(`${result.ok ? 'ok  ' : 'FAIL'} ${engine} ${item.item} ${item.name}: ${result.observed}`)
    }
  } finally {
    await stopServer(first)
    await stopServer(second)
    await store.close()
  }
  return rows
}

function table (rows: Row[]): string {
  const cells = [['engine', 'case', 'expected', 'observed', ''], ...rows.map((row) => [row.engine, `${row.item}. ${row.name}`, row.expected, row.observed, row.ok ? 'ok' : 'DIFFERS'])]
  const escape = (text: string): string => text.replace(/\s+/g, ' ').replaceAll('|', '\\|')
  return [
    `| ${cells[0]?.join(' | ') ?? ''} |`,
    '|---|---|---|---|---|',
    ...cells.slice(1).map((row) => `| ${row.map(escape).join(' | ')} |`)
  ].join('\n')
}

const only = process.env.ATTACK_ONLY
const cases = only === undefined ? CASES : CASES.filter((item) => item.name.includes(only))
const dir = mkdtempSync(join(tmpdir(), 'animal-store-attack-'))
const rows: Row[] = []
try {
  rows.push(...await attack('sqlite', `sqlite:${join(dir, 'animal-store.sqlite')}`, cases))
  const postgres = await postgresSchema()
  if (postgres !== undefined) {
    try {
      rows.push(...await attack('postgres', postgres.url, cases))
    } finally {
      await postgres.drop()
    }
  }
} finally {
  rmSync(dir, { recursive: true, force: true })
}
console.log(table(rows))
const differing = rows.filter((row) => !row.ok).length
console.log(`\n${rows.length} cases, ${differing} differ from what is expected (${new Date().toISOString()}).`)
process.exitCode = differing === 0 ? 0 : 1
