/**
 * npm run bench:replicas: reads with and without a read replica, measured in one run.
 *
 * Builds a throwaway primary and hot standby (a copy of an initdb'd cluster, pg_basebackup -R -X stream, synchronous
 * replication, as docs/replication.md recommends) on free loopback ports, seeds BENCH_ANIMALS
 * (200,000) animals, and runs the built service twice per round: with DATABASE_URL naming the
 * primary alone, and with DATABASE_REPLICA_URLS naming the standby as well. Each run is wrk with
 * GET /v1/pets/{random id}: over a catalogue twenty times what the animal cache holds, nearly
 * every read reaches the database, which is what a replica can take over. Alongside wrk's
 * figures, the statements each server answered (pg_stat_database.xact_commit) show where the
 * reads went. Rounds alternate the two contenders; the table gives medians.
 *
 * The service is pinned to core 0 and wrk to core 1 where taskset exists; both PostgreSQL servers
 * run unpinned on the same machine, so on a small host a replica moves work from one server to
 * another without adding a core: what it buys there is load taken off the primary, not throughput.
 *
 * Environment: BENCH_ANIMALS (200000), BENCH_ROUNDS (5), BENCH_DURATION (5s), BENCH_CONNECTIONS (50).
 * Writes bench/results/<date>-replica-reads.md.
 */
import { writeFileSync } from 'node:fs'
import { loadavg } from 'node:os'
import { join } from 'node:path'
import { createAccount, createApiKey } from '../src/services/accounts.js'
import { openPostgresStore } from '../src/storage/postgres/postgres-store.js'
import { buildReplicatedPair, postgresServerBinaries, type PgServer } from '../test/helpers/pg-cluster.js'
import { eventually } from '../test/helpers/eventually.js'
import { median, startContender, stopContender, wrkWhileSampling, type Measurement } from './measure.js'
import { machine, root } from './support.js'

const ANIMALS = Number(process.env.BENCH_ANIMALS ?? 200_000)
const ROUNDS = Number(process.env.BENCH_ROUNDS ?? 5)
const DURATION = process.env.BENCH_DURATION ?? '5s'
const CONNECTIONS = Number(process.env.BENCH_CONNECTIONS ?? 50)
const script = join(root, 'bench', 'random-id.lua')

interface Run extends Measurement { onPrimary: number, onStandby: number, fromReplica: number, fromPrimary: number }

const commits = async (server: PgServer): Promise<number> =>
  Number((await server.query<{ commits: string }>('SELECT xact_commit AS commits FROM pg_stat_database WHERE datname = current_database()'))[0]?.commits)

/** The scrape token of the contenders (GET /metrics is served only with one). */
const METRICS_TOKEN = 'bench-replica-reads-metrics'

async function waitForReplica (baseUrl: string): Promise<void> {
  await eventually(async () => {
    const ready = await (await fetch(`${baseUrl}/readyz`)).json() as { replicas?: Array<{ state: string }> }
    if (ready.replicas?.[0]?.state !== 'in use') throw new Error(`the replica is not in use: ${JSON.stringify(ready)}`)
  }, { timeout: 60_000, interval: 50 })
}

/** Catalogue reads that reached the store, by where they were answered (db_replica_reads_total); none without a replica. */
async function answers (baseUrl: string): Promise<{ replica: number, primary: number }> {
  const text = await (await fetch(`${baseUrl}/metrics`, { headers: { authorization: `Bearer ${METRICS_TOKEN}` } })).text()
  const of = (where: string): number => Number(new RegExp(`^db_replica_reads_total\\{answered_by="${where}"\\} (\\d+)`, 'm').exec(text)?.[1] ?? 0)
  return { replica: of('replica'), primary: of('primary') + of('confirmed') }
}

const bin = postgresServerBinaries()
if (bin === undefined) throw new Error('PostgreSQL server binaries are missing: apt-get install postgresql-15')
const cleanups: Array<() => Promise<void>> = []
const startedAt = Date.now()
const loadAtStart = loadavg()[0]?.toFixed(2)
try {
  const { primary, standby } = await buildReplicatedPair(bin, { synchronous: true, sharedBuffers: '128MB' }, (destroy) => { cleanups.push(destroy) })
  console.log(`Seeding ${ANIMALS.toLocaleString('en')} animals …`)
  const store = openPostgresStore(primary.url, { poolSize: 2, onError: (error) => { throw error } })
  await store.migrate()
  for (let start = 0; start < ANIMALS; start += 50_000) {
    await store.pets.insertMany(Array.from({ length: Math.min(50_000, ANIMALS - start) }, (_, i) =>
      ({ name: `animal ${start + i + 1}`, categoryId: BigInt((i % 50) + 1), status: (['available', 'pending', 'sold'] as const)[i % 3] })))
  }
  await createAccount(store, { email: 'bench@example.com' })
  const { key } = await createApiKey(store, { email: 'bench@example.com', label: 'bench' })
  await store.close()
  await primary.query('VACUUM ANALYZE pets')

  const contenders: Array<{ name: string, env: Record<string, string> }> = [
    { name: 'primary only', env: { DATABASE_URL: primary.url } },
    { name: 'with the standby as read replica', env: { DATABASE_URL: primary.url, DATABASE_REPLICA_URLS: standby.url } }
  ]
  const runs = new Map<string, Run[]>(contenders.map((contender) => [contender.name, []]))
  for (let round = 1; round <= ROUNDS; round++) {
    for (const contender of round % 2 === 1 ? contenders : [...contenders].reverse()) {
      const running = await startContender(() => ({
        argv: ['node', join(root, 'dist', 'cli', 'main.js'), 'serve'],
        env: { HOST: '127.0.0.1', LOG_LEVEL: 'warn', LOAD_SHED_EVENT_LOOP_DELAY_MS: '0', METRICS_TOKEN, ...contender.env }
      }), true)
      try {
        for (let tries = 0; !(await fetch(`${running.baseUrl}/readyz`).then((response) => response.ok, () => false)); tries++) {
          if (tries > 600) throw new Error('the service did not become ready')
          await new Promise((resolve) => setTimeout(resolve, 50))
        }
        if (contender.env.DATABASE_REPLICA_URLS !== undefined) await waitForReplica(running.baseUrl)
        const wrkOptions = { path: '/v1/pets/1', script, env: { BENCH_PET_PATH: '/v1/pets/', BENCH_ANIMALS: String(ANIMALS) }, connections: CONNECTIONS, key, pinned: true }
        await wrkWhileSampling(running, { ...wrkOptions, duration: '1s' })
        const before = { primary: await commits(primary), standby: await commits(standby), answers: await answers(running.baseUrl) }
        const measured = await wrkWhileSampling(running, { ...wrkOptions, duration: DURATION })
        const seconds = Number.parseFloat(DURATION)
        const run: Run = {
          ...measured,
          onPrimary: (await commits(primary) - before.primary) / seconds,
          onStandby: (await commits(standby) - before.standby) / seconds,
          fromReplica: 0,
          fromPrimary: 0
        }
        const after = await answers(running.baseUrl)
        if (contender.env.DATABASE_REPLICA_URLS !== undefined) {
          run.fromReplica = (after.replica - before.answers.replica) / Math.max(1, measured.requests)
          run.fromPrimary = (after.primary - before.answers.primary) / Math.max(1, measured.requests)
        }
        runs.get(contender.name)?.push(run)
        console.log(`round ${round}, ${contender.name}: ${run.rps.toFixed(0)} req/s, p50 ${run.p50Ms.toFixed(2)} ms, p99 ${run.p99Ms.toFixed(2)} ms, ` +
          `${run.onPrimary.toFixed(0)} transactions/s on the primary, ${run.onStandby.toFixed(0)} on the standby, ` +
          `${(run.fromReplica * 100).toFixed(1)} % of reads answered by the replica, ${(run.fromPrimary * 100).toFixed(1)} % by the primary`)
      } finally {
        await stopContender(running)
      }
    }
  }

  const date = new Date()
  const rows = contenders.map(({ name }) => {
    const all = runs.get(name) ?? []
    const of = (pick: (run: Run) => number): number => median(all.map(pick))
    return `| ${name} | ${of((run) => run.rps).toFixed(0)} | ${of((run) => run.p50Ms).toFixed(2)} ms | ${of((run) => run.p99Ms).toFixed(2)} ms | ` +
      `${of((run) => run.onPrimary).toFixed(0)} | ${of((run) => run.onStandby).toFixed(0)} | ${name === 'primary only' ? '–' : `${(of((run) => run.fromReplica) * 100).toFixed(1)} % / ${(of((run) => run.fromPrimary) * 100).toFixed(1)} %`} | ` +
      `${all.reduce((sum, run) => sum + run.non2xx + run.errors, 0)} |`
  })
  const report = `# Reads with and without a read replica

Date: ${date.toISOString()}. Machine: ${machine()}, Node.js ${process.version}.
Command: \`npm run build && npm run bench:replicas\` (${ANIMALS.toLocaleString('en')} animals; a throwaway primary and synchronous hot standby,
PostgreSQL ${(await primary.query<{ v: string }>("SELECT current_setting('server_version') AS v"))[0]?.v}, shared_buffers 128MB; wrk -t1 -c${CONNECTIONS}, ${DURATION} per run after 1s of warm-up,
GET /v1/pets/{random id}; ${ROUNDS} rounds alternating the contenders, medians). The whole run took ${((Date.now() - startedAt) / 60_000).toFixed(1)} minutes.

The service runs pinned to core 0 and wrk to core 1; both PostgreSQL servers share the machine's cores with them.
Load average (1 min) at the start and the end: ${loadAtStart} and ${loadavg()[0]?.toFixed(2)}.
"Transactions/s" are what each server committed per second over the measured run (pg_stat_database.xact_commit): every
statement is one, and one statement reads up to 500 animals asked for in the same turn of the event loop; the primary's few
a second with the replica are the service's background probes and revocation polls. "Replica / primary" is the share of
reads the replica answered alone, and the share that reached the primary (the rest were answered by the animal cache).

| contender | req/s | p50 | p99 | transactions/s on the primary | on the standby | reads answered by the replica / primary | non-2xx / errors |
|---|---:|---:|---:|---:|---:|---:|---:|
${rows.join('\n')}
`
  const file = join(root, 'bench', 'results', `${date.toISOString().slice(0, 16).replace('T', '-').replace(':', '')}-replica-reads.md`)
  writeFileSync(file, report)
  console.log(`\n${report}\nWritten to ${file}`)
} finally {
  for (const cleanup of cleanups) await cleanup()
}
