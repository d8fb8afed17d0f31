/**
 * What some steps of the request pipeline cost: the service and a build without them
 * (bench/without-steps.ts) run at the same time on the same core (0), each loaded by its own wrk on
 * core 1, so that whatever else the host does slows both alike. Each gets about half the core, and
 * the ratio of their rates is the inverse ratio of what a request costs each. `npm run bench` runs it
 * for the key lifecycle's steps; `npm run bench:steps` runs it alone and writes
 * bench/results/<date>-step-cost.md. bench/protection-cost.ts measures the same way what each protection
 * an operator turns on costs. Environment: BENCH_STEP_ROUNDS (8), BENCH_STEP_DURATION (4s), BENCH_WARM_UP (1s).
 */
import { execFile } from 'node:child_process'
import { copyFileSync, mkdtempSync, readdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { promisify } from 'node:util'
import { seededSqlite } from './datasets.js'
import { median, percent as shareOfCore, SATURATED, startContender, stopContender, timeToFirstAnswer, type Started } from './measure.js'
import { machine, parseWrk, pin, root } from './support.js'
import { KEY_LIFECYCLE_STEPS, serviceWithoutSteps } from './without-steps.js'

const run = promisify(execFile)
const ROUNDS = Number(process.env.BENCH_STEP_ROUNDS ?? 8)
/** The workloads a side-by-side measurement sends (BENCH_COMPARE_WORKLOADS, e.g. `list,get`); all of them by default. */
const CHOSEN_WORKLOADS = process.env.BENCH_COMPARE_WORKLOADS?.split(',')
export const DURATION = process.env.BENCH_STEP_DURATION ?? '4s'
/**
 * Unrecorded load before each measured run (here and in `npm run bench`), so every contender is
 * measured warm: JIT-compiled, caches filled. A second is enough for code two builds share; code only
 * one side runs now and then (a sampled span's, its exporter's) is still being compiled after it,
 * and a longer warm-up measures that side as a long-running server runs it.
 */
export const WARM_UP = process.env.BENCH_WARM_UP ?? '1s'
/**
 * Node's flags for every process measured: as `npm start` and the image run the service, unless
 * BENCH_NODE_FLAGS says otherwise (empty: as the binary runs when started by itself).
 */
const NPM_START_NODE_FLAGS = '--max-semi-space-size=4'
const SERVICE_NODE_FLAGS = (process.env.BENCH_NODE_FLAGS ?? NPM_START_NODE_FLAGS).split(' ').filter((flag) => flag !== '')

/** The Node flags the measured processes run with, as a result file states them. */
export function describeNodeFlags (): string {
  if (process.env.BENCH_NODE_FLAGS === undefined) return `${NPM_START_NODE_FLAGS} (as npm start)`
  return SERVICE_NODE_FLAGS.length === 0 ? 'none (BENCH_NODE_FLAGS empty, as the binary run by itself)' : `${SERVICE_NODE_FLAGS.join(' ')} (BENCH_NODE_FLAGS)`
}

export const STEP_COST_PATHS = { list: '/v1/pets?limit=20', get: '/v1/pets/5' } as const
export type StepCostWorkload = keyof typeof STEP_COST_PATHS

/**
 * Per workload: how much more CPU time a request costs with the steps than without them (0.02 is 2 %),
 * over the rounds where the two servers together kept core 0 saturated, and each such round's figure;
 * `unsaturated` counts the rounds left out.
 */
export type StepCost = Record<StepCostWorkload, { cost: number, rounds: number[], unsaturated: number }>

/** The durable create the side-by-side measurement adds when asked: bench/create.lua, as `npm run bench` sends it. */
export const CREATE_PATH = '/v1/pets'
const CREATE_CONNECTIONS = 64

/**
 * What a workload costs the first side over the second (0.02 is 2 %) by the CPU time each process used per
 * request, in every round, beside the share of core 0 the two servers used together in that round: a
 * create waits for the disk, so its servers never fill the core, and on a host busy with other work
 * neither do readers. Per round, the two processes share the core and whatever the host does alike.
 */
export interface CpuCost { cost: number, rounds: number[], shares: number[] }

async function wrkOn (url: string, key: string, duration: string, create = false): Promise<{ rps: number, requests: number }> {
  const [file = 'wrk', ...args] = pin(1, ['wrk'])
  const load = create ? ['-c', String(CREATE_CONNECTIONS), '-s', join(root, 'bench', 'create.lua')] : ['-c20']
  const { stdout } = await run(file, [...args, '-t1', ...load, `-d${duration}`, '-H', `Authorization: Bearer ${key}`, url])
  const { rps, requests } = parseWrk(stdout)
  return { rps, requests }
}

/** CPU time of a process, its threads and its descendants in microseconds, from the scheduler's nanoseconds (finer than /proc's clock ticks). */
function preciseCpuUs (pid: number): number {
  let total = 0
  try {
    for (const task of readdirSync(`/proc/${pid}/task`)) {
      total += Number(readFileSync(`/proc/${pid}/task/${task}/schedstat`, 'utf8').split(' ')[0]) / 1000
      const children = readFileSync(`/proc/${pid}/task/${task}/children`, 'utf8').trim()
      for (const child of children === '' ? [] : children.split(/\s+/)) total += preciseCpuUs(Number(child))
    }
  } catch {}
  return total
}

/**
 * One measured run of a workload on both servers at once, after WARM_UP of warm-up: the ratio of
 * their rates, the ratio of their CPU time per request (both as the measured side's extra cost)
 * and the share of core 0 the two used together.
 */
async function sideBySideRun (measured: Started, baseline: Started, path: string, key: string, create: boolean): Promise<{ byRate: number, byCpu: number, share: number }> {
  const both = async (duration: string): Promise<Array<{ rps: number, requests: number }>> =>
    await Promise.all([measured, baseline].map(async (server) => await wrkOn(`${server.baseUrl}${path}`, key, duration, create)))
  await both(WARM_UP)
  const cpuBefore = [measured, baseline].map((server) => preciseCpuUs(server.pid))
  const wallBefore = performance.now()
  const [onMeasured, onBaseline] = await both(DURATION)
  const wallUs = (performance.now() - wallBefore) * 1000
  const cpu = [measured, baseline].map((server, index) => preciseCpuUs(server.pid) - (cpuBefore[index] ?? 0))
  // Each side's own figure, to tell what a ratio is made of (a fixed cost per request or one per traced span …).
  const perRequest = (index: number, requests = NaN): string => `${((cpu[index] ?? NaN) / requests).toFixed(1)} µs`
  console.error(`  ${path}: CPU per request ${perRequest(0, onMeasured?.requests)} (first side), ${perRequest(1, onBaseline?.requests)} (current)`)
  return {
    byRate: (onBaseline?.rps ?? NaN) / (onMeasured?.rps ?? NaN) - 1,
    byCpu: ((cpu[0] ?? NaN) / (onMeasured?.requests ?? NaN)) / ((cpu[1] ?? NaN) / (onBaseline?.requests ?? NaN)) - 1,
    share: ((cpu[0] ?? 0) + (cpu[1] ?? 0)) / wallUs
  }
}

/**
 * One side of a side-by-side measurement: a build of the CLI and the settings it runs with beyond
 * the bare ones, or a server script of the benchmark's own (the ceiling),
 * which gets the key in BENCH_KEY.
 */
export type Side = { cli: string, env?: Record<string, string> } | { script: string, env?: Record<string, string> }

/**
 * Both sides serve the SQLite file (or their fixed answers) at once, pinned to core 0, at
 * LOG_LEVEL=warn unless their settings say otherwise; returns how much more a request costs the
 * first side than the second.
 * Two processes of one build differ by a few percent from start to start (their memory layouts
 * and compiled code differ), so every round starts a fresh pair, in alternating order, and the
 * figure is the median over the rounds.
 */
export async function sideBySideCost (options: { measured: Side, baseline: Side, sqlitePath: string, key: string, rounds?: number, creates?: boolean }): Promise<StepCost & { byCpu: Record<StepCostWorkload | 'create', CpuCost> }> {
  // Each side gets its own copy of the file, fresh each round: creates on one file would wait for each other's lock.
  const copies: string[] = []
  const copyFor = (): string => {
    const path = `${options.sqlitePath}.side-${copies.length}`
    copyFileSync(options.sqlitePath, path)
    copies.push(path)
    return path
  }
  const serve = (side: Side) => (port: number) => 'script' in side
    ? { argv: ['node', ...SERVICE_NODE_FLAGS, side.script], env: { ...side.env, PORT: String(port), BENCH_KEY: options.key } }
    : { argv: ['node', ...SERVICE_NODE_FLAGS, side.cli, 'serve'], env: { HOST: '127.0.0.1', LOG_LEVEL: 'warn', ...side.env, PORT: String(port), DATABASE_URL: `sqlite:${options.creates === true ? copyFor() : options.sqlitePath}` } }
  const rounds: Record<StepCostWorkload, number[]> = { list: [], get: [] }
  const unsaturatedRounds: Record<StepCostWorkload, number> = { list: 0, get: 0 }
  const byCpu: Record<StepCostWorkload | 'create', CpuCost> = { list: { cost: NaN, rounds: [], shares: [] }, get: { cost: NaN, rounds: [], shares: [] }, create: { cost: NaN, rounds: [], shares: [] } }
  for (let round = 0; round < (options.rounds ?? ROUNDS); round++) {
    const order = round % 2 === 0 ? [options.measured, options.baseline] : [options.baseline, options.measured]
    const started = [await startContender(serve(order[0] as Side), true), await startContender(serve(order[1] as Side), true)]
    const [measured, baseline] = (round % 2 === 0 ? started : [started[1], started[0]]) as [Started, Started]
    try {
      for (const server of started) await timeToFirstAnswer(server, STEP_COST_PATHS.list, options.key)
      const workloads: Array<[StepCostWorkload | 'create', string]> = [...Object.entries(STEP_COST_PATHS) as Array<[StepCostWorkload, string]>, ...(options.creates === true ? [['create', CREATE_PATH] as ['create', string]] : [])]
      for (const [workload, path] of workloads) {
        if (CHOSEN_WORKLOADS !== undefined && !CHOSEN_WORKLOADS.includes(workload)) continue
        const run = await sideBySideRun(measured, baseline, path, options.key, workload === 'create')
        byCpu[workload].rounds.push(run.byCpu)
        byCpu[workload].shares.push(run.share)
        if (workload === 'create') continue
        // Two servers sharing a core each get what the other leaves; the ratio of their rates is their
        // cost ratio only while the core is saturated between them.
        if (run.share >= SATURATED) rounds[workload].push(run.byRate)
        else {
          unsaturatedRounds[workload]++
          console.error(`  round ${round + 1}, ${workload}: the two servers used ${shareOfCore(run.share)} of core 0; the round is left out of the ratio of rates`)
        }
      }
    } finally {
      for (const server of started) await stopContender(server)
      for (const path of copies.splice(0)) for (const suffix of ['', '-wal', '-shm']) rmSync(path + suffix, { force: true })
    }
  }
  const judged = (workload: StepCostWorkload) => ({ cost: rounds[workload].length >= 2 ? median(rounds[workload]) : NaN, rounds: rounds[workload], unsaturated: unsaturatedRounds[workload] })
  for (const cost of Object.values(byCpu)) cost.cost = median(cost.rounds)
  return { list: judged('list'), get: judged('get'), byCpu }
}

/** What the steps that the second CLI lacks cost: the two builds side by side with the same settings. */
export async function stepCost (options: { withSteps: string, withoutSteps: string, sqlitePath: string, key: string }): Promise<StepCost> {
  return await sideBySideCost({ measured: { cli: options.withSteps }, baseline: { cli: options.withoutSteps }, sqlitePath: options.sqlitePath, key: options.key })
}

export function describeStepCost (cost: StepCost): string[] {
  const percent = (value: number): string => `${(value * 100).toFixed(1)} %`
  return (Object.keys(STEP_COST_PATHS) as StepCostWorkload[]).map((workload) =>
    `| \`GET ${STEP_COST_PATHS[workload]}\` | ${percent(cost[workload].cost)} | ${cost[workload].rounds.map(percent).join(', ')}${cost[workload].unsaturated > 0 ? ` (${cost[workload].unsaturated} unsaturated rounds left out)` : ''} |`)
}

async function main (): Promise<void> {
  const dir = mkdtempSync(join(tmpdir(), 'animal-store-step-cost-'))
  try {
    const seeded = await seededSqlite(join(dir, 'small.sqlite'), 10_000)
    const withoutSteps = serviceWithoutSteps(join(dir, 'without-key-steps'), KEY_LIFECYCLE_STEPS)
    const cost = await stepCost({ withSteps: join(root, 'dist', 'cli', 'main.js'), withoutSteps, sqlitePath: seeded.path, key: seeded.key })
    const date = new Date().toISOString()
    const file = join(root, 'bench', 'results', `${date.slice(0, 10)}-${date.slice(11, 13)}${date.slice(14, 16)}-step-cost.md`)
    writeFileSync(file, [
      '# What the key lifecycle steps cost',
      '',
      `Date: ${date}. Machine: ${machine()}, Node.js ${process.version}. Command: \`npm run bench:steps\`: the service and a build without the `,
      `authorization and key usage steps serve the same 10,000 animals at the same time, both pinned to core 0, each loaded by its own wrk (-t1 -c20, ${DURATION}) on core 1; ${ROUNDS} rounds, each with a fresh pair of processes.`,
      '',
      '| workload | extra CPU time per request (median) | each round |',
      '|---|---:|---|',
      ...describeStepCost(cost),
      ''
    ].join('\n'))
    console.log(`wrote ${file}`)
  } finally {
    rmSync(dir, { recursive: true, force: true })
  }
}

if (process.argv[1] === import.meta.filename) await main()
