/**
 * npm run bench: requests per second of the service beside a bare node:http ceiling,
 * measured in one run with wrk (Debian package `wrk`), server and load generator pinned
 * to different cores when `taskset` exists. Writes bench/results/latest.md.
 */
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import pg from 'pg'
import { openPostgresStore } from '../src/storage/postgres/postgres-store.js'
import { openSqliteStore } from '../src/storage/sqlite/sqlite-store.js'
import type { Store } from '../src/storage/store.js'
import { hasTaskset, machine, root, seed as seedStore, startProcess, stop, waitForHttp, wrk as runWrk } from './support.js'

const ANIMALS = Number(process.env.BENCH_ANIMALS ?? 10_000)
const DURATION = process.env.BENCH_DURATION ?? '5s'
const ROUNDS = Number(process.env.BENCH_ROUNDS ?? 3)
const CONNECTIONS = 50

interface Workload { name: string, path: string, script?: string }

const POSTGRES_ADMIN_URL = process.env.BENCH_POSTGRES_URL ?? 'postgres://postgres@127.0.0.1:5432/test'
const POSTGRES_BENCH_DB = 'animal_store_bench'

/** A fresh benchmark database on the local PostgreSQL, or undefined when none answers. */
async function freshPostgresDatabase (): Promise<string | undefined> {
  const admin = new pg.Client({ connectionString: POSTGRES_ADMIN_URL, connectionTimeoutMillis: 3000 })
  try {
    await admin.connect()
    await admin.query(`DROP DATABASE IF EXISTS ${POSTGRES_BENCH_DB}`)
    await admin.query(`CREATE DATABASE ${POSTGRES_BENCH_DB}`)
  } catch (error) {
    console.log(`PostgreSQL not measured: ${(error as Error).message}`)
    return undefined
  } finally {
    await admin.end().catch(() => {})
  }
  const url = new URL(POSTGRES_ADMIN_URL)
  url.pathname = `/${POSTGRES_BENCH_DB}`
  return url.toString()
}

const seed = async (store: Store): Promise<string> => await seedStore(store, ANIMALS)

function wrk (url: string, key: string, workload: Workload): ReturnType<typeof runWrk> {
  return runWrk({ url: url + workload.path, key, connections: CONNECTIONS, duration: DURATION, animals: ANIMALS, ...(workload.script !== undefined && { script: workload.script }) })
}

const median = (values: number[]): number => [...values].sort((a, b) => a - b)[Math.floor(values.length / 2)] ?? 0

async function main (): Promise<void> {
  const dir = mkdtempSync(join(tmpdir(), 'animal-store-bench-'))
  try {
    const dbPath = join(dir, 'bench.sqlite')
    const key = await seed(openSqliteStore(dbPath))
    const postgresUrl = await freshPostgresDatabase()
    const postgresKey = postgresUrl === undefined ? undefined : await seed(openPostgresStore(postgresUrl, { poolSize: 4, onError: () => {} }))
    const workloads: Workload[] = [
      { name: 'GET /v1/pets?limit=20', path: '/v1/pets?limit=20' },
      { name: 'GET /v1/pets?status=sold&limit=20', path: '/v1/pets?status=sold&limit=20' },
      { name: 'GET /v1/pets/{random id}', path: '/v1/pets/1', script: join(root, 'bench', 'random-id.lua') },
      { name: 'POST /v1/pets', path: '/v1/pets', script: join(root, 'bench', 'create.lua') }
    ]
    const serviceLogLevel = process.env.BENCH_LOG_LEVEL ?? 'warn'
    const contenders: Array<{ name: string, command: string[], env: Record<string, string>, url: string, key: string, only?: string }> = [
      { name: 'ceiling (bare node:http)', command: ['node', join(root, 'bench', 'ceiling-server.mjs')], env: { PORT: '18181', BENCH_KEY: key }, url: 'http://127.0.0.1:18181', key },
      { name: 'animal-store (SQLite)', command: ['node', join(root, 'dist', 'cli', 'main.js'), 'serve'], env: { PORT: '18182', HOST: '127.0.0.1', DATABASE_URL: `sqlite:${dbPath}`, LOG_LEVEL: serviceLogLevel }, url: 'http://127.0.0.1:18182', key },
      // Group commit off: every create is its own synced transaction, to show what batching buys.
      { name: 'animal-store (SQLite, one transaction per create)', command: ['node', join(root, 'dist', 'cli', 'main.js'), 'serve'], env: { PORT: '18185', HOST: '127.0.0.1', DATABASE_URL: `sqlite:${dbPath}`, LOG_LEVEL: serviceLogLevel, WRITE_BATCH_SIZE: '1' }, url: 'http://127.0.0.1:18185', key, only: 'POST /v1/pets' },
      // The same service without metrics, to show what counting every request costs.
      { name: 'animal-store (SQLite, metrics off)', command: ['node', join(root, 'dist', 'cli', 'main.js'), 'serve'], env: { PORT: '18184', HOST: '127.0.0.1', DATABASE_URL: `sqlite:${dbPath}`, LOG_LEVEL: serviceLogLevel, METRICS_ENABLED: 'false' }, url: 'http://127.0.0.1:18184', key },
      ...(postgresUrl === undefined || postgresKey === undefined
        ? []
        : [{ name: 'animal-store (PostgreSQL)', command: ['node', join(root, 'dist', 'cli', 'main.js'), 'serve'], env: { PORT: '18183', HOST: '127.0.0.1', DATABASE_URL: postgresUrl, LOG_LEVEL: serviceLogLevel }, url: 'http://127.0.0.1:18183', key: postgresKey }])
    ]
    const results = new Map<string, Array<ReturnType<typeof wrk>>>()
    for (let round = 1; round <= ROUNDS; round++) {
      for (const contender of contenders) {
        const child = startProcess(contender.command, contender.env)
        await waitForHttp(contender.url)
        for (const workload of workloads) {
          if (contender.only !== undefined && contender.only !== workload.name) continue
          const result = wrk(contender.url, contender.key, workload)
          const id = `${contender.name}|${workload.name}`
          results.set(id, [...(results.get(id) ?? []), result])
          console.log(`round ${round} ${contender.name.padEnd(26)} ${workload.name.padEnd(36)} ${result.rps.toFixed(0).padStart(7)} req/s  p50 ${result.p50}  p99 ${result.p99}  non-2xx ${result.non2xx}  errors ${result.errors}`)
        }
        await stop(child)
      }
    }
    writeReport(workloads, contenders.map((c) => c.name), results)
  } finally {
    rmSync(dir, { recursive: true, force: true })
  }
}

function writeReport (workloads: Workload[], contenders: string[], results: Map<string, Array<ReturnType<typeof wrk>>>): void {
  const [ceiling = '', ...services] = contenders
  const lines = [
    '# Benchmark results',
    '',
    `Date: ${new Date().toISOString()}. Machine: ${machine()}, Node.js ${process.version}.`,
    `Command: \`npm run bench\` (wrk -t1 -c${CONNECTIONS} -d${DURATION}, ${ROUNDS} interleaved rounds, median shown; ${ANIMALS} animals; server ${hasTaskset ? 'pinned to core 0, wrk to core 1' : 'not pinned'}; service LOG_LEVEL=${process.env.BENCH_LOG_LEVEL ?? 'warn'}).`,
    '',
    '| workload | contender | req/s | × ceiling | p50 | p99 | non-2xx / errors |',
    '|---|---|---:|---:|---:|---:|---:|'
  ]
  const rpsOf = (contender: string, workload: Workload): number => median((results.get(`${contender}|${workload.name}`) ?? []).map((r) => r.rps))
  for (const workload of workloads) {
    const baseRps = rpsOf(ceiling, workload)
    lines.push(`| ${workload.name} | ${ceiling} | ${baseRps.toFixed(0)} | 1.00 | | | |`)
    for (const service of services) {
      const ours = results.get(`${service}|${workload.name}`) ?? []
      if (ours.length === 0) continue
      const last = ours[ours.length - 1]
      const bad = `${ours.reduce((sum, r) => sum + r.non2xx, 0)} / ${ours.reduce((sum, r) => sum + r.errors, 0)}`
      lines.push(`| | ${service} | ${rpsOf(service, workload).toFixed(0)} | ${(rpsOf(service, workload) / baseRps).toFixed(2)} | ${last?.p50 ?? '?'} | ${last?.p99 ?? '?'} | ${bad} |`)
    }
  }
  const post = workloads.find((workload) => workload.name === 'POST /v1/pets')
  const single = services.find((service) => service === 'animal-store (SQLite, one transaction per create)')
  if (post && single) {
    lines.push('', `Group commit: durable creates at ${(rpsOf('animal-store (SQLite)', post) / rpsOf(single, post)).toFixed(1)}× the rate of one synced transaction per create (WRITE_BATCH_SIZE=1), same run, 50 connections.`)
  }
  const withMetrics = services.find((service) => service === 'animal-store (SQLite)')
  const withoutMetrics = services.find((service) => service === 'animal-store (SQLite, metrics off)')
  if (withMetrics && withoutMetrics) {
    const costs = workloads.map((workload) => `${workload.name}: ${(100 * (1 - rpsOf(withMetrics, workload) / rpsOf(withoutMetrics, workload))).toFixed(1)} %`)
    lines.push('', `Cost of metrics (throughput lost with METRICS_ENABLED=true against false, same run): ${costs.join('; ')}. Differences of a few percent are within the noise of a shared machine.`)
  }
  lines.push('', 'Creates are durable: each 201 is sent after its group-committed transaction is synced (SQLite: WAL, synchronous=FULL; PostgreSQL: its own fsync settings).', '')
  writeFileSync(join(root, 'bench', 'results', 'latest.md'), lines.join('\n'))
  console.log('\n' + lines.join('\n'))
}

await main()
