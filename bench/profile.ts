/**
 * npm run bench:profile: where the CPU time of a cached read, and of a durable create, goes, in the
 * service and in the ceiling. Each contender runs alone on core 0 under Node's `--cpu-prof`, loaded by wrk on core 1
 * (-t1 -c50) after a warm-up; the samples of the measured seconds are summed by area (a pipeline
 * step, Node's writing of the header fields, the socket write, the garbage collector …) and each
 * area's share is turned into microseconds of the CPU time per request the run measured. Contenders:
 * the ceiling, the bare service (LOG_LEVEL=warn, nothing configured), the production profile (when
 * Redis answers) and the production profile with tracing at a 10 % ratio, exporting to an OTLP/HTTP
 * receiver the tool runs. Tracing's areas come first: a sample whose innermost frame of the bundle is
 * OpenTelemetry's code or the service's tracing (found through dist's source map), or that is in Node's
 * async hooks before any frame of the bundle, is tracing's. The report gives each run's CPU share beside its figures: a run under 95 % of its
 * core costs more per request than a saturated one (docs/performance.md, the saturation rule), so
 * compare areas between runs of about the same share.
 * The create workload is bench/create.lua over 64 connections, as `npm run bench` sends it, against
 * the ceiling that appends each batch of bodies to a log synced once per batch (BENCH_CREATES=synced)
 * and the service on a fresh copy of the database; its areas name the create path's parts by the
 * source file (through the source map) of the sample's innermost frame of the bundle: reading the
 * body, the JSON parse, validation, the handler, the group commit, SQLite. Samples in a synchronous
 * fdatasync wait for the disk rather than use the CPU: they are left out of the areas and reported
 * as their own share of the samples. Writes bench/results/<date>-profile.md.
 * Environment: BENCH_PROFILE_DURATION (10s), BENCH_WARM_UP (3s), BENCH_PROFILE_WORKLOADS (list,get,create:
 * the workloads to profile).
 */
import { copyFileSync, readdirSync, readFileSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { SourceMap } from 'node:module'
import { join } from 'node:path'
import { seededSqlite } from './datasets.js'
import { percent, SATURATED, startContender, stopContender, timeToFirstAnswer, wrkWhileSampling, type Measurement } from './measure.js'
import { redisAvailable } from './redis.js'
import { PRODUCTION_ENV } from './report.js'
import { CREATE_PATH, STEP_COST_PATHS } from './step-cost.js'
import { machine, otlpSink, root } from './support.js'

const DURATION = process.env.BENCH_PROFILE_DURATION ?? '10s'
const WARM_UP = process.env.BENCH_WARM_UP ?? '3s'
const CLI = join(root, 'dist', 'cli', 'main.js')
/** Tracing as docs/performance.md measures its cost: parent-based, one new trace in ten recorded. */
const TRACING_ENV = { OTEL_TRACES_SAMPLER: 'parentbased_traceidratio', OTEL_TRACES_SAMPLER_ARG: '0.1' }

/** What each workload asks: a cached read over 50 connections, or bench/create.lua's create over 64. */
const WORKLOADS = {
  list: { path: STEP_COST_PATHS.list, connections: 50 },
  get: { path: STEP_COST_PATHS.get, connections: 50 },
  create: { path: CREATE_PATH, connections: 64, script: join(root, 'bench', 'create.lua') }
} as const
type Workload = keyof typeof WORKLOADS
const CHOSEN = (process.env.BENCH_PROFILE_WORKLOADS ?? 'list,get,create').split(',').filter((name): name is Workload => name in WORKLOADS)

interface CallFrame { functionName: string, url: string, lineNumber: number, columnNumber: number }
interface ProfileNode { id: number, callFrame: CallFrame, children?: number[] }
interface Profile { nodes: ProfileNode[], startTime: number, endTime: number, samples: number[], timeDeltas: number[] }

/** The function each step of the pipeline runs (src/http/steps/), by the name the area takes. */
const STEP_FUNCTIONS: Record<string, string> = {
  identify: 'step: request id',
  countInFlight: 'step: metrics',
  countRequest: 'step: metrics',
  refuseWhileClosing: 'step: drain refusal',
  closeWhileClosing: 'step: drain refusal',
  shedWhileLagging: 'step: load shedding',
  applyCors: 'step: CORS',
  authenticateRequest: 'step: authentication',
  limitRate: 'step: rate limit',
  checkFraming: 'step: message framing',
  route: 'step: routing',
  checkScope: 'step: authorization',
  checkInput: 'step: validation',
  addCommonHeaders: 'step: common headers',
  countKeyUse: 'step: key usage',
  writeAccessLog: 'step: access log'
}
/** What the pipeline's own `answer` calls: any other child of a function named `answer` is the handler step's. */
const PIPELINE_ANSWER_CALLS = new Set(['write', 'finish', 'handOver', ...Object.keys(STEP_FUNCTIONS)])
const NODE_HTTP = 'Node: HTTP parser, request and response objects, after the write'

/** The server bundle, which `serve` loads: every frame of a request's work is in it. */
const SERVER = '/dist/cli/server.js'
/** The server bundle's source map: which package or source file a frame of it comes from. */
const sourceMap = new SourceMap(JSON.parse(readFileSync(join(root, `${SERVER}.map`), 'utf8')) as ConstructorParameters<typeof SourceMap>[0])
const sources = new Map<string, string>()
function sourceOf (frame: CallFrame): string {
  const at = `${frame.lineNumber}:${frame.columnNumber}`
  let source = sources.get(at)
  if (source === undefined) {
    const entry = sourceMap.findEntry(frame.lineNumber, frame.columnNumber) as { originalSource?: string }
    source = entry.originalSource ?? ''
    sources.set(at, source)
  }
  return source
}

const ASYNC_CONTEXT = 'tracing: async context (AsyncLocalStorage, promise hooks)'
/** Tracing's area of a sample, from its innermost frame of the bundle (leaf first); undefined: not tracing's. */
function tracingAreaOf (stack: CallFrame[]): string | undefined {
  for (const frame of stack) {
    if (frame.url === 'node:async_hooks' || frame.url === 'node:internal/async_hooks') return ASYNC_CONTEXT
    if (!frame.url.endsWith(SERVER)) continue
    const source = sourceOf(frame)
    if (source.includes('/context-async-hooks/')) return ASYNC_CONTEXT
    if (/\/(otlp-|exporter-trace-otlp)/.test(source) || (/\/sdk-trace(-base)?\//.test(source) && /BatchSpanProcessor/.test(source))) return 'tracing: span export (batch processor, OTLP JSON, HTTP)'
    if (source.includes('/@opentelemetry/')) return 'tracing: spans, sampler, propagator (SDK and API)'
    if (/src\/(http\/steps|services)\/tracing\.ts$/.test(source)) return 'tracing: the trace step and child spans (attributes, route)'
    return undefined
  }
  return undefined
}

/** The area one sample's stack (leaf first) belongs to. */
function areaOf (stack: CallFrame[]): string {
  const [leaf] = stack
  const tracing = tracingAreaOf(stack)
  if (tracing !== undefined) return tracing
  if (leaf?.functionName === '(garbage collector)') return 'garbage collector'
  if (leaf?.functionName === '(program)') return '(program): native code no function owns'
  for (let index = stack.length - 1; index >= 0; index--) {
    const frame = stack[index] as CallFrame
    if (frame.functionName === 'end' && frame.url === 'node:_http_outgoing') return 'Node: res.end, the socket write (writev)'
    if (frame.functionName === 'writeHead' && frame.url === 'node:_http_server') return "Node: writeHead, the header fields' validation and text"
    const step = STEP_FUNCTIONS[frame.functionName]
    if (step !== undefined) return step
    if (frame.functionName === 'answer' && index > 0 && !PIPELINE_ANSWER_CALLS.has((stack[index - 1] as CallFrame).functionName)) return 'step: handler (the cached answer)'
    if (/^(Pipeline|Redis|Command|DataHandler)\b/.test(frame.functionName)) return 'Redis client (rate limits shared)'
  }
  if (stack.some((frame) => frame.functionName === 'handleRequest')) return 'pipeline: the loop over the steps, writing the answer'
  if (stack.some((frame) => frame.url.endsWith(SERVER) || frame.url.endsWith('/dist/cli/main.js'))) return 'service: timers and other work outside requests'
  return NODE_HTTP
}

/** Samples blocked in a synchronous fdatasync: the process waits for the disk there, it does not use the CPU. */
const DISK_WAIT = 'waiting in fdatasync on the event loop'

/** A create's parts, by the source file (or package) of the innermost frame of the bundle. */
const CREATE_SOURCES: Array<[RegExp, string]> = [
  [/\/(raw-body|bytes|unpipe|iconv-lite|http-errors|statuses|depd)\//, 'create: reading the body (raw-body)'],
  [/\/lossless-json\/|src\/http\/json-body\.ts$|src\/core\/int64\.ts$/, 'create: JSON parse (lossless-json, json-body.ts)'],
  [/\/(ajv|ajv-formats|@fastify\/ajv-compiler|fast-content-type-parse)\/|src\/http\/steps\/validation\.ts$|src\/http\/schemas\//, 'create: validation (content type, schema)'],
  [/src\/storage\/(group-commit|sync-barrier)\.ts$/, 'create: group commit and shared sync'],
  [/src\/storage\//, 'create: SQLite insert and commit (pet-writes.ts, better-sqlite3)'],
  [/src\/(http\/routes\/pets|core\/pets|core\/idempotency|services\/(pet-catalog|idempotency-keys|sandbox-catalog))\.ts$/, 'create: createPet (catalogue, idempotency, the answer\'s JSON)']
]

/** The area of one sample of a create: the answer's write as for reads, then the create path's parts, then as areaOf says. */
function createAreaOf (stack: CallFrame[]): string {
  const [leaf] = stack
  if (leaf?.functionName === '(garbage collector)' || leaf?.functionName === '(program)') return areaOf(stack)
  if (stack.some((frame) => frame.functionName === 'fdatasyncSync')) return DISK_WAIT
  for (let index = stack.length - 1; index >= 0; index--) {
    const frame = stack[index] as CallFrame
    if ((frame.functionName === 'end' && frame.url === 'node:_http_outgoing') || (frame.functionName === 'writeHead' && frame.url === 'node:_http_server')) return areaOf(stack)
  }
  for (const frame of stack) {
    if (frame.url.includes('/better-sqlite3/')) return 'create: SQLite insert and commit (pet-writes.ts, better-sqlite3)'
    if (frame.url.endsWith('/bench/ceiling-server.mjs')) return 'ceiling: its own code (batching, the log append)'
    if (!frame.url.endsWith(SERVER)) continue
    const source = sourceOf(frame)
    const found = CREATE_SOURCES.find(([pattern]) => pattern.test(source))
    if (found !== undefined) return found[1]
    break
  }
  return areaOf(stack)
}

/**
 * Microseconds of CPU time per request by area, over the profile's samples between `from` and `to`
 * (µs since its start); DISK_WAIT's entry is instead its share of the samples, idle ones left out.
 */
function areas (profile: Profile, from: number, to: number, usPerRequest: number, areaOfSample: (stack: CallFrame[]) => string): Map<string, number> {
  const byId = new Map(profile.nodes.map((node) => [node.id, node]))
  const parent = new Map<number, number>()
  for (const node of profile.nodes) for (const child of node.children ?? []) parent.set(child, node.id)
  const counts = new Map<string, number>()
  let busy = 0
  let at = 0
  profile.samples.forEach((id, index) => {
    at += profile.timeDeltas[index] ?? 0
    if (at < from || at > to) return
    const stack: CallFrame[] = []
    for (let node: number | undefined = id; node !== undefined; node = parent.get(node)) stack.push((byId.get(node) as ProfileNode).callFrame)
    if (stack[0]?.functionName === '(idle)') return
    const area = areaOfSample(stack)
    if (area !== DISK_WAIT) busy++
    counts.set(area, (counts.get(area) ?? 0) + 1)
  })
  const waiting = counts.get(DISK_WAIT) ?? 0
  return new Map([...counts].map(([area, count]) => [area, area === DISK_WAIT ? count / (busy + waiting) : usPerRequest * count / busy]))
}

interface Run { name: string, workload: Workload, measurement: Measurement, areas: Map<string, number> }

async function profiled (name: string, argv: string[], env: Record<string, string>, key: string, workload: Workload, dir: string): Promise<Run> {
  const profileDir = mkdtempSync(join(dir, 'profile-'))
  const [node = 'node', ...rest] = argv
  const started = await startContender(() => ({ argv: [node, '--cpu-prof', `--cpu-prof-dir=${profileDir}`, ...rest], env }), true)
  const { path, connections } = WORKLOADS[workload]
  const script = 'script' in WORKLOADS[workload] ? WORKLOADS.create.script : undefined
  let measurement: Measurement
  let from: number
  let to: number
  try {
    await timeToFirstAnswer(started, STEP_COST_PATHS.list, key)
    const options = { path, script, env: {}, connections, key, pinned: true }
    await wrkWhileSampling(started, { ...options, duration: WARM_UP })
    from = performance.now()
    measurement = await wrkWhileSampling(started, { ...options, duration: DURATION })
    to = performance.now()
  } finally {
    await stopContender(started)
  }
  // The profile ends as the process exits: the measured seconds are counted back from there.
  const exited = performance.now()
  const file = readdirSync(profileDir).find((entry) => entry.endsWith('.cpuprofile'))
  if (file === undefined) throw new Error(`${name} wrote no profile`)
  const profile = JSON.parse(readFileSync(join(profileDir, file), 'utf8')) as Profile
  const length = profile.endTime - profile.startTime
  const found = areas(profile, length - (exited - from) * 1000, length - (exited - to) * 1000, measurement.cpuUsPerRequest, workload === 'create' ? createAreaOf : areaOf)
  console.log(`  ${name}, ${workload}: ${measurement.cpuUsPerRequest.toFixed(1)} µs per request at ${percent(measurement.cpuShare)} of its core`)
  return { name, workload, measurement, areas: found }
}

function report (runs: Run[]): string[] {
  const names = [...new Set(runs.flatMap((run) => [...run.areas.keys()]))]
  const total = (name: string): number => Math.max(...runs.map((run) => run.areas.get(name) ?? 0))
  names.sort((a, b) => total(b) - total(a))
  const cell = (value: number | undefined): string => value === undefined || value < 0.05 ? '–' : value.toFixed(1)
  const waiting = names.filter((name) => name === DISK_WAIT)
  return [
    `| µs of CPU per request | ${runs.map((run) => `${run.name}, ${run.workload}`).join(' | ')} |`,
    `|---|${runs.map(() => '---:').join('|')}|`,
    `| **all** | ${runs.map((run) => `**${run.measurement.cpuUsPerRequest.toFixed(1)}**`).join(' | ')} |`,
    ...names.filter((name) => name !== DISK_WAIT).map((name) => `| ${name} | ${runs.map((run) => cell(run.areas.get(name))).join(' | ')} |`),
    ...waiting.map((name) => `| ${name}: share of the samples (not CPU time) | ${runs.map((run) => run.areas.has(name) ? percent(run.areas.get(name) ?? 0) : '–').join(' | ')} |`),
    `| rate (answers/s) | ${runs.map((run) => Math.round(run.measurement.rps).toLocaleString('en')).join(' | ')} |`,
    `| CPU share of its core; wrk's | ${runs.map((run) => `${percent(run.measurement.cpuShare)}; ${percent(run.measurement.loadShare)}${run.measurement.cpuShare < SATURATED ? ' (unsaturated)' : ''}`).join(' | ')} |`
  ]
}

async function main (): Promise<void> {
  const dir = mkdtempSync(join(tmpdir(), 'animal-store-profile-'))
  const sink = await otlpSink()
  try {
    const seeded = await seededSqlite(join(dir, 'small.sqlite'), 10_000)
    const service = ['node', '--max-semi-space-size=4', CLI, 'serve']
    const serviceEnv = { HOST: '127.0.0.1', LOG_LEVEL: 'warn', DATABASE_URL: `sqlite:${seeded.path}` }
    const contenders: Array<{ name: string, argv: string[], env: Record<string, string> }> = [
      { name: 'ceiling', argv: ['node', join(root, 'bench', 'ceiling-server.mjs')], env: { BENCH_KEY: seeded.key } },
      { name: 'bare', argv: service, env: serviceEnv },
      ...(await redisAvailable()
        ? [
            { name: 'production', argv: service, env: { ...serviceEnv, ...PRODUCTION_ENV } },
            { name: 'production, tracing 10 %', argv: service, env: { ...serviceEnv, ...PRODUCTION_ENV, ...TRACING_ENV, OTEL_EXPORTER_OTLP_ENDPOINT: sink.url } }
          ]
        : [])
    ]
    // Creates: the ceiling keeps them in its synced log, each service run writes to a fresh copy of the database.
    const forCreates = (env: Record<string, string>, run: number): Record<string, string> => {
      if (env.BENCH_KEY !== undefined) return { ...env, BENCH_CREATES: 'synced', BENCH_LOG_FILE: join(dir, 'ceiling.log') }
      const copy = join(dir, `create-${run}.sqlite`)
      copyFileSync(seeded.path, copy)
      return { ...env, DATABASE_URL: `sqlite:${copy}` }
    }
    const runs: Run[] = []
    for (const workload of CHOSEN) {
      for (const contender of contenders) {
        const env = workload === 'create' ? forCreates(contender.env, runs.length) : contender.env
        runs.push(await profiled(contender.name, contender.argv, env, seeded.key, workload, dir))
      }
    }
    const date = new Date().toISOString()
    const file = join(root, 'bench', 'results', `${date.slice(0, 10)}-${date.slice(11, 13)}${date.slice(14, 16)}-profile.md`)
    writeFileSync(file, [
      '# Where the CPU time of a cached read and of a durable create goes',
      '',
      `Date: ${date}. Machine: ${machine()}, Node.js ${process.version}. Command: \`npm run bench:profile\`: each contender alone on core 0 under`,
      `\`--cpu-prof\`, loaded by wrk (-t1, -c50 for reads, -c64 for creates) on core 1, ${WARM_UP} of warm-up, then ${DURATION} measured; \`GET ${STEP_COST_PATHS.list}\` (list),`,
      `\`GET ${STEP_COST_PATHS.get}\` (get) and \`POST ${CREATE_PATH}\` with bench/create.lua's body (create; the ceiling with BENCH_CREATES=synced), 10,000 animals.`,
      `Workloads: ${CHOSEN.join(', ')}. A figure is the share of the measured seconds' busy samples in that area, times the CPU time per request the run measured.`,
      'Compare runs of about the same CPU share: an unsaturated server pays more per request. A create may leave the core unfilled: it waits for the disk.',
      '',
      ...report(runs),
      ''
    ].join('\n'))
    console.log(`wrote ${file}`)
  } finally {
    rmSync(dir, { recursive: true, force: true })
    sink.close()
  }
}

await main()
