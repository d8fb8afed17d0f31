/**
 * Cached reads during a steady stream of revocations. `revocationChurn` runs wrk on
 * GET /v1/pets?limit=20 with valid keys against a started service, alternately quiet and while
 * a side loop generates and revokes keys of another account at a steady rate (100 a second by
 * default) through the store, and returns both read rates (and, when given the metrics URL, the
 * key-cache misses of each run). With one key it is the plain cached read; with many (rotated
 * by bench/rotate-keys.lua) the cache holds as many keys as many clients would make it hold.
 * Before revocations were invalidated key by key, every revocation seen by a poll emptied every
 * instance's cache, and every key then went back to the database.
 *
 * npm run bench:revocations runs it standalone: a fresh SQLite database seeded with
 * `animal-store seed`, the built service (`node dist/cli/main.js serve`, pinned to core 0, wrk
 * to core 1 when taskset exists), once with one key and once with BENCH_KEYS keys, and writes
 * bench/results/<date>-revocations.md. Environment: BENCH_ROUNDS (3), BENCH_DURATION (5s),
 * BENCH_CHURN_PER_SECOND (100), BENCH_KEYS (500), BENCH_ANIMALS (10000), BENCH_CLI (the built
 * CLI to measure; dist/cli/main.js).
 */
import { execFileSync } from 'node:child_process'
import { randomBytes } from 'node:crypto'
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs'
import { cpus, loadavg, tmpdir } from 'node:os'
import { join, relative } from 'node:path'
import { pathToFileURL } from 'node:url'
import { generateApiKey, MAX_LIVE_KEYS, newKeyId } from '../src/core/api-keys.js'
import { openPostgresStore } from '../src/storage/postgres/postgres-store.js'
import { openSqliteStore } from '../src/storage/sqlite/sqlite-store.js'
import type { Store } from '../src/storage/store.js'
import { median, startContender, stopContender, timeToFirstAnswer, wrkWhileSampling, type Measurement, type Started } from './measure.js'
import { hasTaskset, machine, root } from './support.js'

export interface ChurnOptions {
  /** The started service. */
  running: Started
  /** Valid keys of the service: one for the plain cached read; several are used in turn, request by request. */
  keys: string[]
  /** The service's DATABASE_URL: the side loop writes to the same database through a store of its own. */
  databaseUrl: string
  /** Generate-and-revoke pairs per second. */
  perSecond?: number
  rounds?: number
  duration?: string
  connections?: number
  pinned?: boolean
  /** GET here (with the token, if any) reads api_key_cache_lookups_total before and after each run. */
  metrics?: { url: string, token?: string | undefined }
}

/** One wrk run and the key-cache misses the service counted during it (undefined without metrics). */
export interface ChurnRun extends Measurement { cacheMisses: number | undefined }

export interface ChurnResult {
  quiet: ChurnRun[]
  churn: ChurnRun[]
  /** Median requests per second of each. */
  quietRps: number
  churnRps: number
  /** Revocations made while wrk ran, and their rate. */
  revocations: number
  revocationsPerSecond: number
  path: string
  perSecond: number
  duration: string
  connections: number
  keys: number
}

const READ_PATH = '/v1/pets?limit=20'
const CHURN_EMAIL = 'revocation-churn@bench.example'

function openByUrl (databaseUrl: string): Store {
  return databaseUrl.startsWith('sqlite:')
    ? openSqliteStore(databaseUrl.slice('sqlite:'.length))
    : openPostgresStore(databaseUrl, { poolSize: 2, onError: () => {} })
}

/**
 * Generates and revokes a key of the churn account `perSecond` times a second, on a schedule
 * kept by absolute time, until stopped; resolves with how many revocations were made.
 */
function churnLoop (store: Store, accountId: number, perSecond: number): { stop: () => Promise<number> } {
  const state = { running: true, revocations: 0 }
  const intervalMs = 1000 / perSecond
  const done = (async () => {
    const started = performance.now()
    for (let n = 0; state.running; n++) {
      const generated = generateApiKey()
      const row = await store.apiKeys.create({ id: newKeyId(), accountId, label: 'churn', prefix: generated.prefix, hash: generated.hash }, { maxLive: MAX_LIVE_KEYS })
      await store.apiKeys.revoke(row.id)
      state.revocations++
      const wait = started + (n + 1) * intervalMs - performance.now()
      if (wait > 0) await new Promise((resolve) => setTimeout(resolve, wait))
    }
  })()
  return { stop: async () => { state.running = false; await done; return state.revocations } }
}

/** The service's count of key-cache misses, or undefined when its metrics cannot be read. */
async function cacheMisses (metrics: ChurnOptions['metrics']): Promise<number | undefined> {
  if (metrics === undefined) return undefined
  try {
    const response = await fetch(metrics.url, { headers: metrics.token === undefined ? {} : { authorization: `Bearer ${metrics.token}` } })
    const text = await response.text()
    const match = /^api_key_cache_lookups_total\{result="miss"\} (\d+)$/m.exec(text)
    return response.ok && match !== null ? Number(match[1]) : undefined
  } catch {
    return undefined
  }
}

/** Quiet and churning wrk runs, interleaved over `rounds`, after a warm-up. */
export async function revocationChurn (options: ChurnOptions): Promise<ChurnResult> {
  const perSecond = options.perSecond ?? 100
  const rounds = options.rounds ?? 3
  const duration = options.duration ?? '5s'
  const connections = options.connections ?? 32
  const pinned = options.pinned ?? hasTaskset
  const [key = ''] = options.keys
  const dir = mkdtempSync(join(tmpdir(), 'animal-store-churn-keys-'))
  const keysFile = join(dir, 'keys.txt')
  writeFileSync(keysFile, options.keys.join('\n'))
  const wrkOptions: { script?: string, env: Record<string, string> } = options.keys.length > 1
    ? { script: join(root, 'bench', 'rotate-keys.lua'), env: { BENCH_KEYS_FILE: keysFile, BENCH_PATH: READ_PATH } }
    : { env: {} }
  const store = openByUrl(options.databaseUrl)
  try {
    await store.migrate()
    const account = await store.accounts.findByEmail(CHURN_EMAIL) ?? await store.accounts.create({ email: CHURN_EMAIL, name: 'revocation churn benchmark' })
    const run = async (runDuration: string): Promise<ChurnRun> => {
      const before = await cacheMisses(options.metrics)
      const measured = await wrkWhileSampling(options.running, { path: READ_PATH, ...wrkOptions, connections, key, duration: runDuration, pinned })
      const after = await cacheMisses(options.metrics)
      return { ...measured, cacheMisses: before === undefined || after === undefined ? undefined : after - before }
    }
    // Fills the cache with every key, and warms the service.
    await run('2s')
    const quiet: ChurnRun[] = []
    const churn: ChurnRun[] = []
    let revocations = 0
    let churnSeconds = 0
    for (let round = 0; round < rounds; round++) {
      quiet.push(await run(duration))
      const loop = churnLoop(store, account.id, perSecond)
      const started = performance.now()
      churn.push(await run(duration))
      churnSeconds += (performance.now() - started) / 1000
      revocations += await loop.stop()
    }
    return {
      quiet,
      churn,
      quietRps: median(quiet.map((m) => m.rps)),
      churnRps: median(churn.map((m) => m.rps)),
      revocations,
      revocationsPerSecond: revocations / churnSeconds,
      path: READ_PATH,
      perSecond,
      duration,
      connections,
      keys: options.keys.length
    }
  } finally {
    await store.close()
    rmSync(dir, { recursive: true, force: true })
  }
}

/** The results as a Markdown report. */
export function churnReport (results: ChurnResult[], context: { command: string, date: string, cli: string, animals: number }): string {
  const misses = (run: ChurnRun): string => run.cacheMisses === undefined ? '?' : String(run.cacheMisses)
  const row = (name: string, run: ChurnRun): string =>
    `| ${name} | ${Math.round(run.rps)} | ${run.p50Ms.toFixed(2)} | ${run.p99Ms.toFixed(2)} | ${misses(run)} | ${run.non2xx} | ${run.errors} |`
  const [first] = results
  return [
    '# Cached reads during a stream of revocations',
    '',
    `Date: ${context.date}. Machine: ${machine()}, Node.js ${process.version}; one-minute load average ${loadavg()[0]?.toFixed(2)} at the end (anything else on these cores skews every figure).`,
    `Command: \`${context.command}\` (the service: \`node ${context.cli} serve\` on SQLite with ${context.animals} animals seeded by \`animal-store seed\`${hasTaskset && cpus().length > 1 ? '; server pinned to core 0, wrk to core 1' : ''}).`,
    '',
    `wrk -t1 -c${first?.connections ?? '?'} -d${first?.duration ?? '?'} GET ${first?.path ?? READ_PATH}, ${first?.quiet.length ?? 0} rounds, each a quiet run then a run while another`,
    `account's keys are generated and revoked through the store at ${first?.perSecond ?? '?'} a second. "Misses" are the service's api_key_cache_lookups_total{result="miss"} during the run.`,
    '',
    '| keys read with | quiet, requests/s (median) | during revocations, requests/s (median) | revocations made |',
    '|---|---|---|---|',
    ...results.map((result) => `| ${result.keys} | ${Math.round(result.quietRps)} | ${Math.round(result.churnRps)} (${(100 * result.churnRps / result.quietRps).toFixed(0)} %) | ${result.revocations} (${Math.round(result.revocationsPerSecond)}/s) |`),
    '',
    ...results.flatMap((result) => [
      `${result.keys} key${result.keys === 1 ? '' : 's'}:`,
      '',
      '| run | requests/s | p50 ms | p99 ms | cache misses | non-2xx | socket errors |',
      '|---|---|---|---|---|---|---|',
      ...result.quiet.flatMap((quiet, index) => [row(`round ${index + 1}, quiet`, quiet), ...(result.churn[index] ? [row(`round ${index + 1}, revocations`, result.churn[index])] : [])]),
      ''
    ])
  ].join('\n')
}

/** Keys of `count` accounts' worth of keys, created through the store (within the cap of each account). */
async function readerKeys (databaseUrl: string, count: number): Promise<string[]> {
  const store = openByUrl(databaseUrl)
  try {
    await store.migrate()
    const keys: string[] = []
    for (let index = 0; keys.length < count; index++) {
      const account = await store.accounts.create({ email: `reader${index}@bench.example`, name: null })
      for (let n = 0; n < MAX_LIVE_KEYS && keys.length < count; n++) {
        const generated = generateApiKey()
        await store.apiKeys.create({ id: newKeyId(), accountId: account.id, label: 'reader', prefix: generated.prefix, hash: generated.hash }, { maxLive: MAX_LIVE_KEYS })
        keys.push(generated.key)
      }
    }
    return keys
  } finally {
    await store.close()
  }
}

async function standalone (): Promise<void> {
  const cli = process.env.BENCH_CLI ?? join(root, 'dist', 'cli', 'main.js')
  const animals = Number(process.env.BENCH_ANIMALS ?? 10_000)
  const manyKeys = Number(process.env.BENCH_KEYS ?? 500)
  const dir = mkdtempSync(join(tmpdir(), 'animal-store-revocations-'))
  const databaseUrl = `sqlite:${join(dir, 'animal-store.sqlite')}`
  const metricsToken = randomBytes(16).toString('hex')
  let running: Started | undefined
  try {
    execFileSync(process.execPath, [cli, 'seed', '--count', String(animals)], { env: { ...process.env, DATABASE_URL: databaseUrl, LOG_LEVEL: 'warn' }, stdio: ['ignore', 'ignore', 'inherit'] })
    const keys = await readerKeys(databaseUrl, manyKeys)
    running = await startContender(() => ({ argv: [process.execPath, cli, 'serve'], env: { DATABASE_URL: databaseUrl, LOG_LEVEL: 'warn', HOST: '127.0.0.1', METRICS_TOKEN: metricsToken } }), hasTaskset)
    await timeToFirstAnswer(running, READ_PATH, keys[0] ?? '')
    const common = {
      running,
      databaseUrl,
      metrics: { url: `${running.baseUrl}/metrics`, token: metricsToken },
      perSecond: Number(process.env.BENCH_CHURN_PER_SECOND ?? 100),
      rounds: Number(process.env.BENCH_ROUNDS ?? 3),
      duration: process.env.BENCH_DURATION ?? '5s'
    }
    const results = [await revocationChurn({ ...common, keys: keys.slice(0, 1) }), await revocationChurn({ ...common, keys })]
    const date = new Date()
    const report = churnReport(results, { command: 'npm run bench:revocations', date: date.toISOString(), cli: relative(root, cli), animals })
    const file = join(root, 'bench', 'results', `${date.toISOString().slice(0, 16).replace('T', '-').replace(':', '')}-revocations.md`)
    writeFileSync(file, report)
    console.log(report)
    console.log(`written to ${relative(root, file)}`)
  } finally {
    if (running !== undefined) await stopContender(running)
    rmSync(dir, { recursive: true, force: true })
  }
}

if (import.meta.url === pathToFileURL(process.argv[1] ?? '').href) await standalone()
