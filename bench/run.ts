/**
 * npm run bench: the service beside a bare node:http ceiling and json-server 0.17, measured in
 * one run with wrk (Debian package `wrk`): server and load generator pinned to different cores
 * when `taskset` exists, contenders interleaved over several rounds, data seeded through the
 * service's own `animal-store seed`. Writes bench/results/latest.md with every target of the
 * performance issue checked. The service runs in three profiles side by side: bare (LOG_LEVEL=warn,
 * no protection configured), as shipped (the defaults), and production (rate limit shared through
 * Redis, CORS, metrics, info logs). Environment: BENCH_ROUNDS (5), BENCH_DURATION (2s),
 * BENCH_WARM_UP (1s), BENCH_SMALL (10000), BENCH_LARGE (1000000), BENCH_POSTGRES_URL, BENCH_LOG_LEVEL (warn),
 * BENCH_ONLY (contender names separated by semicolons: measure those and the ceiling only, for a quick look;
 * the report then leaves the other targets unmeasured).
 */
import { copyFileSync, mkdtempSync, rmSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { basename, join } from 'node:path'
import { hostConditions, machine, root, syncToDisk } from './support.js'
import { installJsonServer, jsonServerDatabase } from './peers.js'
import { copyPostgresDatabase, dropPostgresDatabase, seededPostgres, seededSqlite } from './datasets.js'
import { askForEveryId, median, percent, startContender, stopContender, timeToFirstAnswer, wrkWhileSampling, type Measurement, type Started } from './measure.js'
import { AS_SHIPPED, CEILING, CEILING_SYNCED, CEILING_SYNCED_EACH, CEILING_WRITTEN, PRODUCTION, PRODUCTION_ENV, writeReport } from './report.js'
import { redisAvailable } from './redis.js'
import { stepCost, WARM_UP, type StepCost } from './step-cost.js'
import { KEY_LIFECYCLE_STEPS, serviceWithoutSteps } from './without-steps.js'

/**
 * Five short rounds rather than three long ones, in about the same time: on a shared host one
 * run in three or four is skewed by a neighbour's load, and a median of five leaves two of them out.
 */
const ROUNDS = Number(process.env.BENCH_ROUNDS ?? 5)
const DURATION = process.env.BENCH_DURATION ?? '2s'
const SMALL = Number(process.env.BENCH_SMALL ?? 10_000)
const LARGE = Number(process.env.BENCH_LARGE ?? 1_000_000)
const LOG_LEVEL = process.env.BENCH_LOG_LEVEL ?? 'warn'
const ONLY = process.env.BENCH_ONLY?.split(';').map((part) => part.trim()).filter((part) => part !== '')
const wanted = (name: string): boolean => ONLY === undefined || name === CEILING || ONLY.includes(name)
const CLI = join(root, 'dist', 'cli', 'main.js')
/** The name BENCH_ONLY takes for the measurement of the key lifecycle steps. */
const KEY_STEPS = 'key lifecycle steps'
/** The V8 flag `npm start` and the Dockerfile run the service with. */
const SERVICE_NODE_FLAGS = ['--max-semi-space-size=4']

export type WorkloadName = 'list' | 'status' | 'get' | 'post' | 'mixed'

export const WORKLOADS: Record<WorkloadName, string> = {
  list: 'GET /v1/pets?limit=20',
  status: 'GET /v1/pets?status=sold&limit=20, following next links',
  get: 'GET /v1/pets/{random id}',
  post: 'POST /v1/pets (64 connections)',
  mixed: '90 % GET /v1/pets?limit=20, 10 % POST /v1/pets'
}

/** How a contender is reached: the paths differ for json-server, which has its own query syntax. */
interface Paths { list: string, status: string, pet: string, create: string }
const OUR_PATHS: Paths = { list: '/v1/pets?limit=20', status: '/v1/pets?status=sold&limit=20', pet: '/v1/pets/', create: '/v1/pets' }
const JSON_SERVER_PATHS: Paths = { list: '/pets?_limit=20', status: '/pets?status=sold&_limit=20', pet: '/pets/', create: '/pets' }

export interface Contender {
  name: string
  /** Data size, for random ids and the report. */
  animals: number
  workloads: WorkloadName[]
  /** Starts the process on fresh data; the command runs on core 0 when pinned. */
  command: (port: number) => { argv: string[], env: Record<string, string> }
  pinned: boolean
  paths: Paths
  key: string
  /** Measure start-up to first answer on every start. */
  timeStartup?: boolean
}

function wrkArguments (contender: Contender, workload: WorkloadName): { path: string, script?: string, env: Record<string, string>, connections: number } {
  const { paths } = contender
  const script = (name: string): string => join(root, 'bench', name)
  // The ceiling creates nothing: its turn in the mixed load's round is its read rate, which the
  // mixed load is compared with, measured seconds (not minutes) from the service's mixed run.
  if (contender.name === CEILING && workload === 'mixed') return wrkArguments(contender, 'list')
  switch (workload) {
    case 'list': return { path: paths.list, env: {}, connections: 50 }
    case 'status': return { path: paths.status, script: script('follow-next.lua'), env: { BENCH_FIRST_PATH: paths.status }, connections: 50 }
    case 'get': return { path: `${paths.pet}1`, script: script('random-id.lua'), env: { BENCH_PET_PATH: paths.pet, BENCH_ANIMALS: String(contender.animals) }, connections: 50 }
    case 'post': return { path: paths.create, script: script('create.lua'), env: {}, connections: 64 }
    case 'mixed': return { path: paths.list, script: script('mixed.lua'), env: { BENCH_READ_PATH: paths.list, BENCH_CREATE_PATH: paths.create }, connections: 50 }
  }
}

async function main (): Promise<void> {
  const began = performance.now()
  const dir = mkdtempSync(join(tmpdir(), 'animal-store-bench-'))
  const databases: string[] = []
  try {
    console.log(`Seeding ${SMALL} and ${LARGE} animals with animal-store seed …`)
    const small = await seededSqlite(join(dir, 'small.sqlite'), SMALL)
    const largeName = `${LARGE.toLocaleString('en')} animals`
    const large = wanted(`animal-store SQLite, ${largeName}`) ? await seededSqlite(join(dir, 'large.sqlite'), LARGE) : small
    const postgresSmall = wanted('animal-store PostgreSQL') || wanted(`animal-store PostgreSQL, ${largeName}`) ? await seededPostgres('animal_store_bench_small', SMALL) : undefined
    const postgresLarge = postgresSmall === undefined || !wanted(`animal-store PostgreSQL, ${largeName}`) ? undefined : await seededPostgres('animal_store_bench_large', LARGE)
    const jsonServer = await installJsonServer()
    const jsonDb = join(dir, 'json-server-db.json')
    const hostAtStart = hostConditions(join(dir, 'host-probe.bin'))

    /**
     * Every start of a SQLite contender gets a fresh copy of the seeded file: creates never leak into the
     * next measurement. The copy is on disk before the contender starts, and removed when it stops: the
     * kernel writes dirty pages back after 30 s, and a copy of the 1,000,000-animal file written back
     * then landed in whichever run came next.
     */
    const runFiles: string[] = []
    const sqliteCopy = (seeded: string): string => {
      const path = join(dir, `fresh-${basename(seeded)}`)
      copyFileSync(seeded, path)
      syncToDisk(path)
      runFiles.push(path)
      return path
    }
    const removeRunFiles = (): void => {
      for (const path of runFiles.splice(0)) for (const suffix of ['', '-wal', '-shm']) rmSync(path + suffix, { force: true })
    }
    const ceiling = (env: Record<string, string> = {}): { argv: string[], env: Record<string, string> } =>
      ({ argv: ['node', join(root, 'bench', 'ceiling-server.mjs')], env: { BENCH_KEY: small.key, ...env } })
    /** The ceiling keeping its creates in a log of its own (see ceiling-server.mjs), removed when it stops. */
    const ceilingWithLog = (creates: string) => (): { argv: string[], env: Record<string, string> } => {
      const path = join(dir, 'ceiling-creates.log')
      runFiles.push(path)
      return ceiling({ BENCH_CREATES: creates, BENCH_LOG_FILE: path })
    }
    const service = (env: Record<string, string>): { argv: string[], env: Record<string, string> } =>
      ({ argv: ['node', ...SERVICE_NODE_FLAGS, CLI, 'serve'], env: { HOST: '127.0.0.1', LOG_LEVEL, ...env } })
    /** The service with nothing but its data configured: the defaults (LOG_LEVEL=info among them), as `npm start` runs it. */
    const asShipped = (env: Record<string, string>): { argv: string[], env: Record<string, string> } =>
      ({ argv: ['node', ...SERVICE_NODE_FLAGS, CLI, 'serve'], env: { HOST: '127.0.0.1', ...env } })
    const withRedis = await redisAvailable()
    if (!withRedis) console.error('Redis does not answer at redis://127.0.0.1:6379: the production profile is left out')
    const profiles: Contender[] = [
      { name: AS_SHIPPED, animals: SMALL, workloads: ['list', 'get', 'post'], pinned: true, paths: OUR_PATHS, key: small.key, command: () => asShipped({ DATABASE_URL: `sqlite:${sqliteCopy(small.path)}` }) },
      ...(withRedis ? [{ name: PRODUCTION, animals: SMALL, workloads: ['list', 'get', 'post'] as WorkloadName[], pinned: true, paths: OUR_PATHS, key: small.key, command: () => asShipped({ DATABASE_URL: `sqlite:${sqliteCopy(small.path)}`, ...PRODUCTION_ENV }) }] : [])
    ]

    const oneTransactionPerCreate: Contender = { name: 'animal-store SQLite, one transaction per create', animals: SMALL, workloads: ['post'], pinned: true, paths: OUR_PATHS, key: small.key, command: () => service({ DATABASE_URL: `sqlite:${sqliteCopy(small.path)}`, WRITE_BATCH_SIZE: '1' }) }
    // In the order they take turns: the ratios of the targets compare neighbours (the service with the
    // ceiling before it, the 1,000,000-animal walk with the 10,000-animal one), measured seconds apart.
    // Creates take their turns in an order of their own (below).
    const contenders: Contender[] = ([
      { name: CEILING, animals: SMALL, workloads: ['list', 'status', 'get', 'post', 'mixed'], pinned: true, paths: OUR_PATHS, key: small.key, command: () => ceiling() },
      { name: CEILING_SYNCED_EACH, animals: SMALL, workloads: ['post'], pinned: true, paths: OUR_PATHS, key: small.key, command: ceilingWithLog('synced-each') },
      { name: CEILING_SYNCED, animals: SMALL, workloads: ['post'], pinned: true, paths: OUR_PATHS, key: small.key, command: ceilingWithLog('synced') },
      { name: CEILING_WRITTEN, animals: SMALL, workloads: ['post'], pinned: true, paths: OUR_PATHS, key: small.key, command: ceilingWithLog('written') },
      { name: 'animal-store SQLite', animals: SMALL, workloads: ['list', 'status', 'get', 'post', 'mixed'], pinned: true, paths: OUR_PATHS, key: small.key, command: () => service({ DATABASE_URL: `sqlite:${sqliteCopy(small.path)}` }) },
      // The three profiles take their turns side by side: bare (above), as shipped, production.
      ...profiles,
      oneTransactionPerCreate,
      { name: 'animal-store SQLite, durability off', animals: SMALL, workloads: ['post'], pinned: true, paths: OUR_PATHS, key: small.key, command: () => service({ DATABASE_URL: `sqlite:${sqliteCopy(small.path)}`, SQLITE_SYNCHRONOUS: 'off' }) },
      { name: `animal-store SQLite, ${LARGE.toLocaleString('en')} animals`, animals: LARGE, workloads: ['list', 'status', 'get', 'post', 'mixed'], pinned: true, paths: OUR_PATHS, key: large.key, timeStartup: true, command: () => service({ DATABASE_URL: `sqlite:${sqliteCopy(large.path)}` }) },
      { name: 'animal-store SQLite, metrics off', animals: SMALL, workloads: ['list', 'status', 'get', 'post'], pinned: true, paths: OUR_PATHS, key: small.key, command: () => service({ DATABASE_URL: `sqlite:${sqliteCopy(small.path)}`, METRICS_ENABLED: 'false' }) },
      ...(postgresSmall === undefined
        ? []
        : [{ name: 'animal-store PostgreSQL', animals: SMALL, workloads: ['list', 'status', 'get', 'post', 'mixed'] as WorkloadName[], pinned: true, paths: OUR_PATHS, key: postgresSmall.key, command: () => service({ DATABASE_URL: postgresSmall.url }) }]),
      ...(postgresLarge === undefined
        ? []
        : [{ name: `animal-store PostgreSQL, ${LARGE.toLocaleString('en')} animals`, animals: LARGE, workloads: ['list', 'status', 'get', 'post', 'mixed'] as WorkloadName[], pinned: true, paths: OUR_PATHS, key: postgresLarge.key, command: () => service({ DATABASE_URL: postgresLarge.url }) }]),
      { name: 'json-server 0.17', animals: SMALL, workloads: ['list', 'status', 'get', 'post'], pinned: true, paths: JSON_SERVER_PATHS, key: small.key, command: (port) => ({ argv: ['node', jsonServer, '--quiet', '--host', '127.0.0.1', '--port', String(port), jsonServerDatabase(jsonDb, SMALL)], env: {} }) },
      { name: 'animal-store SQLite, 1 worker, unpinned', animals: SMALL, workloads: ['list', 'post'], pinned: false, paths: OUR_PATHS, key: small.key, command: () => service({ DATABASE_URL: `sqlite:${sqliteCopy(small.path)}`, WEB_CONCURRENCY: '1' }) },
      { name: 'animal-store SQLite, 2 workers, unpinned', animals: SMALL, workloads: ['list', 'post'], pinned: false, paths: OUR_PATHS, key: small.key, command: () => service({ DATABASE_URL: `sqlite:${sqliteCopy(small.path)}`, WEB_CONCURRENCY: '2' }) }
    ] as Contender[]).filter((contender) => wanted(contender.name))
    // PostgreSQL contenders start on a fresh copy of their seeded database too.
    const postgresTemplates = new Map<string, string>()
    if (postgresSmall) postgresTemplates.set('animal-store PostgreSQL', 'animal_store_bench_small')
    if (postgresLarge) postgresTemplates.set(`animal-store PostgreSQL, ${LARGE.toLocaleString('en')} animals`, 'animal_store_bench_large')

    let copies = 0
    const results = new Map<string, Measurement[]>()
    const startups: number[] = []
    const start = async (contender: Contender): Promise<{ running: Started, copy: { name: string, url: string } | undefined }> => {
      const template = postgresTemplates.get(contender.name)
      const copy = template === undefined ? undefined : await copyPostgresDatabase(template, `animal_store_bench_copy_${++copies}`)
      if (copy) databases.push(copy.name)
      const running = await startContender((port) => {
        const { argv, env } = contender.command(port)
        return { argv, env: { ...env, ...(copy !== undefined && { DATABASE_URL: copy.url }) } }
      }, contender.pinned)
      const ready = await timeToFirstAnswer(running, contender.paths.list, contender.key)
      if (contender.timeStartup === true) startups.push(ready)
      return { running, copy }
    }
    const stop = async ({ running, copy }: { running: Started, copy: { name: string } | undefined }): Promise<void> => {
      await stopContender(running)
      removeRunFiles()
      if (copy !== undefined) await dropPostgresDatabase(copy.name)
    }
    /** One warmed-up run of a workload. */
    const measure = async (round: number, contender: Contender, running: Started, workload: WorkloadName): Promise<void> => {
      const args = wrkArguments(contender, workload)
      // Random ids are a cached read once each id has been asked for: the warm-up first asks for every id, so a slow
      // host's short warm-up leaves no miss in the measurement (json-server caches nothing; a larger catalogue than
      // the cache holds measures uncached reads).
      if (workload === 'get' && contender.paths === OUR_PATHS && contender.animals <= SMALL) await askForEveryId(running, contender.paths.pet, contender.key, contender.animals)
      await wrkWhileSampling(running, { ...args, key: contender.key, duration: WARM_UP, pinned: contender.pinned })
      const result = await wrkWhileSampling(running, { ...args, key: contender.key, duration: DURATION, pinned: contender.pinned })
      const id = `${contender.name}|${workload}`
      results.set(id, [...(results.get(id) ?? []), result])
      console.log(`round ${round}  ${contender.name.padEnd(46)} ${workload.padEnd(7)} ${result.rps.toFixed(0).padStart(7)} req/s  CPU ${percent(result.cpuShare).padStart(5)}  wrk ${percent(result.loadShare).padStart(5)}  p50 ${result.p50Ms.toFixed(2)} ms  p99 ${result.p99Ms.toFixed(2)} ms  peak RSS ${result.peakRssMb.toFixed(0)} MB  non-2xx ${result.non2xx}  errors ${result.errors}`)
    }

    /** Starts the contender afresh, measures those of `workloads` it runs, one after the other, and stops it. */
    const measureFresh = async (round: number, contender: Contender, workloads: WorkloadName[]): Promise<void> => {
      const instance = await start(contender)
      try {
        for (const workload of workloads) if (contender.workloads.includes(workload)) await measure(round, contender, instance.running, workload)
      } finally {
        await stop(instance)
      }
    }

    // Reads: every run has its contender to itself, freshly started on fresh data and warmed up,
    // the way the writes below are measured. Idle contenders left running beside the measured one
    // shared its core with their timers and their garbage collection after load, and a single start
    // per contender let one process decide a target by its draw: in one trial two identical processes
    // of the service, side by side, served the same reads 13 % apart round after round. Contenders
    // still take turns run by run, so a ratio compares runs seconds apart, not minutes.
    const READS: WorkloadName[] = ['list', 'status', 'get']
    for (let round = 1; round <= ROUNDS; round++) {
      for (const workload of READS) {
        for (const contender of contenders.filter((c) => c.workloads.includes(workload))) await measureFresh(round, contender, [workload])
      }
    }
    // Writes: creates, then the mixed load, each run on a fresh copy of its data. Durable creates take
    // their turn between the two variants they are held against, one transaction per create before
    // them and durability off after, so both ratios compare neighbours; the mixed load follows the
    // ceiling's list rate.
    // The profiles follow durability off, which follows the bare service: every ratio compares runs at most two turns apart.
    const measured = (wantedProfiles: Contender[]): Contender[] => wantedProfiles.filter((c) => contenders.includes(c))
    const createTurns = contenders.filter((c) => c.workloads.includes('post') && c !== oneTransactionPerCreate && !profiles.includes(c))
    const insertNear = (name: string, turns: Contender[], offset: number): void => {
      const at = createTurns.findIndex((c) => c.name === name)
      createTurns.splice(at === -1 ? createTurns.length : at + offset, 0, ...turns)
    }
    insertNear('animal-store SQLite', measured([oneTransactionPerCreate]), 0)
    insertNear('animal-store SQLite, durability off', measured(profiles), 1)
    for (let round = 1; round <= ROUNDS; round++) {
      for (const contender of createTurns) await measureFresh(round, contender, ['post'])
      for (const contender of contenders.filter((c) => c.workloads.includes('mixed'))) await measureFresh(round, contender, ['mixed'])
    }
    // The key lifecycle's steps, against a build without them, both on core 0 at once (bench/step-cost.ts).
    let keySteps: StepCost | undefined
    if (wanted(KEY_STEPS)) {
      console.log('Measuring the key lifecycle steps: the service and a build without them side by side on one core …')
      keySteps = await stepCost({ withSteps: CLI, withoutSteps: serviceWithoutSteps(join(dir, 'without-key-steps'), KEY_LIFECYCLE_STEPS), sqlitePath: small.path, key: small.key })
    }
    const hostAtEnd = hostConditions(join(dir, 'host-probe.bin'))
    writeReport({
      file: join(root, 'bench', 'results', 'latest.md'),
      host: [hostAtStart, hostAtEnd],
      date: new Date().toISOString(),
      machine: machine(),
      command: `npm run bench (wrk -t1, ${DURATION} per run after ${WARM_UP} of warm-up, ${ROUNDS} interleaved rounds, medians; ${SMALL.toLocaleString('en')} and ${LARGE.toLocaleString('en')} animals seeded with animal-store seed; pinned contenders on core 0 and wrk on core 1; LOG_LEVEL=${LOG_LEVEL})`,
      contenders,
      workloads: WORKLOADS,
      results,
      startupMs: median(startups),
      keySteps,
      large: LARGE,
      minutes: (performance.now() - began) / 60_000
    })
  } finally {
    for (const name of databases) await dropPostgresDatabase(name).catch(() => {})
    rmSync(dir, { recursive: true, force: true })
  }
}

await main()
