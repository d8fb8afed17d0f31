/**
 * npm run bench:overload: what the service does at 3× its saturation rate, and how fast it
 * recovers. A benchmark, not a test. Writes bench/results/overload.md; stdout ends with the summary.
 *
 *   1. Seeds a temporary SQLite file (10,000 animals) and starts `node dist/cli/main.js serve`
 *      (server pinned to core 0 when taskset exists) with LOG_LEVEL=warn and a tighter
 *      shedding threshold, LOAD_SHED_EVENT_LOOP_DELAY_MS=100 (the default is 1000).
 *   2. Saturation: closed-loop wrk on GET /v1/pets?limit=20 (-t1 -c50 -d5s, pinned to core 1).
 *   3. Overload: bench/overload-load.ts, open loop at 3× that rate for 15 s, one request in ten a
 *      POST /v1/pets, from a fixed population of 1000 keep-alive connections (pinned to core 1).
 *   4. Recovery: from the end of the overload, one GET /v1/pets?limit=20 every 50 ms until five
 *      in a row are 200 in under 50 ms (given up after 30 s).
 *
 * Exit code: 0 when every check holds; 1 when a status other than 2xx/429/503 was seen or the
 * service died; 3 when the statuses were all allowed but sent requests failed (socket errors,
 * timeouts) or the service did not recover in time; 2 when the benchmark itself
 * could not run. Overridable through OVERLOAD_* variables, listed below.
 */
import { spawn, type ChildProcess } from 'node:child_process'
import { existsSync, mkdirSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs'
import { loadavg, tmpdir } from 'node:os'
import { join } from 'node:path'
import { performance } from 'node:perf_hooks'
import { createInterface } from 'node:readline'
import { openSqliteStore } from '../src/storage/sqlite/sqlite-store.js'
import type { LoadOptions, LoadResult } from './overload-load.js'
import { freePort, hasTaskset, machine, pin, root, seed, startProcess, stop, waitForHttp, wrk, type WrkResult } from './support.js'

const env = process.env
const ANIMALS = Number(env.BENCH_ANIMALS ?? 10_000)
const SHED_MS = Number(env.OVERLOAD_SHED_MS ?? 100)
const FACTOR = Number(env.OVERLOAD_FACTOR ?? 3)
const SECONDS = Number(env.OVERLOAD_SECONDS ?? 15)
const CONNECTIONS = Number(env.OVERLOAD_CONNECTIONS ?? 1000)
const POST_EVERY = Number(env.OVERLOAD_POST_EVERY ?? 10)
const TIMEOUT_MS = Number(env.OVERLOAD_TIMEOUT_MS ?? 10_000)
const SATURATION_DURATION = env.OVERLOAD_SATURATION_DURATION ?? '5s'
const SATURATION_CONNECTIONS = 50
const PROBE_EVERY_MS = 50
const PROBE_GOOD_MS = 50
const PROBE_STREAK = 5
const PROBE_TIMEOUT_MS = 2000
const RECOVERY_LIMIT_MS = Number(env.OVERLOAD_RECOVERY_LIMIT_MS ?? 30_000)
const WATCHDOG_MS = 150_000
const HOST = '127.0.0.1'
let origin = ''
const ALLOWED = (status: number): boolean => (status >= 200 && status < 300) || status === 429 || status === 503
const children = new Set<ChildProcess>()

interface Probe { at: number, status: number | string, ms: number }
interface Recovery { ms: number | undefined, streakStartMs: number | undefined, probes: Probe[] }

const sleep = async (ms: number): Promise<void> => await new Promise((resolve) => setTimeout(resolve, ms))
const sum = (counts: Record<string, number>): number => Object.values(counts).reduce((total, n) => total + n, 0)
/** Error kinds of requests that waited in the load generator and were never written to the service. */
const CLIENT_SIDE_BACKLOG = new Set(['timeout (waiting for a connection)', 'abandoned unsent when the overload stopped'])
const sumOnly = (counts: Record<string, number>, kinds: Set<string>): number => sum(Object.fromEntries(Object.entries(counts).filter(([kind]) => kinds.has(kind))))
const sumExcept = (counts: Record<string, number>, kinds: Set<string>): number => sum(counts) - sumOnly(counts, kinds)
const list = (counts: Record<string, number>): string => Object.keys(counts).length === 0 ? 'none' : Object.entries(counts).map(([name, n]) => `${name}: ${n}`).join(', ')

/**
 * Probes every PROBE_EVERY_MS from `from` until PROBE_STREAK answers in a row are 200 in under
 * PROBE_GOOD_MS; recovery is the time from `from` to the end of the last of them.
 */
async function probeRecovery (key: string, from: number): Promise<Recovery> {
  const probes: Probe[] = []
  let streak = 0
  for (let next = from; performance.now() - from < RECOVERY_LIMIT_MS; next += PROBE_EVERY_MS) {
    const wait = next - performance.now()
    if (wait > 0) await sleep(wait)
    const start = performance.now()
    let status: number | string
    try {
      const response = await fetch(`${origin}/v1/pets?limit=20`, { headers: { authorization: `Bearer ${key}` }, signal: AbortSignal.timeout(PROBE_TIMEOUT_MS) })
      await response.arrayBuffer()
      status = response.status
    } catch (error) {
      status = (error as Error).name === 'TimeoutError' ? 'timeout' : ((error as Error & { cause?: { code?: string } }).cause?.code ?? (error as Error).name)
    }
    const end = performance.now()
    probes.push({ at: start - from, status, ms: end - start })
    streak = status === 200 && end - start < PROBE_GOOD_MS ? streak + 1 : 0
    if (streak === PROBE_STREAK) {
      return { ms: end - from, streakStartMs: (probes[probes.length - PROBE_STREAK] as Probe).at, probes }
    }
    next = Math.max(next, end - PROBE_EVERY_MS)
  }
  return { ms: undefined, streakStartMs: undefined, probes }
}

/** Runs the load generator; calls onStopped the moment its schedule ends. */
async function overload (options: LoadOptions, onStopped: () => void): Promise<LoadResult> {
  const command = pin(1, [process.execPath, '--import', 'tsx', join(root, 'bench', 'overload-load.ts'), JSON.stringify(options)])
  const child = spawn(command[0] ?? process.execPath, command.slice(1), { cwd: root, stdio: ['ignore', 'pipe', 'inherit'] })
  children.add(child)
  let result: LoadResult | undefined
  const lines = createInterface({ input: child.stdout })
  lines.on('line', (line) => {
    const message = JSON.parse(line) as { type: string }
    if (message.type === 'stopped') onStopped()
    if (message.type === 'result') result = message as LoadResult
  })
  const code = await new Promise<number | null>((resolve) => child.on('close', resolve))
  children.delete(child)
  if (result === undefined) throw new Error(`the load generator exited with ${code} and no result`)
  return result
}

interface Outcome {
  saturation: WrkResult
  /** 2xx a second in the saturation run. */
  saturationRate: number
  /** One-minute load averages before and after: this machine may be running other work. */
  loadBefore: number
  loadAfter: number
  rate: number
  load: LoadResult
  recovery: Recovery
  serviceDied: string | undefined
  serviceExit: string
  checks: Array<{ name: string, ok: boolean, detail: string }>
  exitCode: number
}

async function main (): Promise<Outcome> {
  if (!existsSync(join(root, 'dist', 'cli', 'main.js'))) throw new Error('dist/cli/main.js is missing: run `npm run build` first')
  const loadBefore = loadavg()[0] ?? 0
  const dir = mkdtempSync(join(tmpdir(), 'animal-store-overload-'))
  try {
    const dbPath = join(dir, 'bench.sqlite')
    const key = await seed(openSqliteStore(dbPath), ANIMALS)
    const port = await freePort()
    origin = `http://${HOST}:${port}`
    const service = startProcess(['node', join(root, 'dist', 'cli', 'main.js'), 'serve'], {
      PORT: String(port),
      HOST,
      DATABASE_URL: `sqlite:${dbPath}`,
      LOG_LEVEL: 'warn',
      LOAD_SHED_EVENT_LOOP_DELAY_MS: String(SHED_MS),
      RATE_LIMIT_PER_MINUTE: '0',
      REDIS_URL: ''
    })
    children.add(service)
    let serviceDied: string | undefined
    service.on('exit', (code, signal) => { serviceDied ??= `exited with ${code ?? signal}` })
    await waitForHttp(origin)

    console.log(`saturation: wrk -t1 -c${SATURATION_CONNECTIONS} -d${SATURATION_DURATION} GET /v1/pets?limit=20, after a 2 s warm-up …`)
    const target = { url: `${origin}/v1/pets?limit=20`, key, connections: SATURATION_CONNECTIONS, animals: ANIMALS }
    wrk({ ...target, duration: '2s' })
    await sleep(500)
    const saturation = wrk({ ...target, duration: SATURATION_DURATION })
    // Only 2xx count: with a 100 ms threshold the service may already shed a little here.
    const saturationRate = saturation.requests > 0 ? saturation.rps * (saturation.requests - saturation.non2xx) / saturation.requests : 0
    console.log(`saturation: ${saturationRate.toFixed(0)} 2xx/s (${saturation.rps.toFixed(0)} req/s), p50 ${saturation.p50}, p99 ${saturation.p99}, non-2xx ${saturation.non2xx}, errors ${saturation.errors}`)
    if (saturationRate <= 0) throw new Error('wrk measured no throughput')
    await sleep(1000)

    const rate = Math.round(saturationRate * FACTOR)
    console.log(`overload: ${rate} req/s open loop for ${SECONDS} s over ${CONNECTIONS} connections …`)
    let recoveryRun: Promise<Recovery> | undefined
    const load = await overload(
      { host: HOST, port, key, rate, durationMs: SECONDS * 1000, postEvery: POST_EVERY, connections: CONNECTIONS, timeoutMs: TIMEOUT_MS },
      () => { recoveryRun = probeRecovery(key, performance.now()) })
    if (recoveryRun === undefined) throw new Error('the load generator never reported the end of the overload')
    const recovery = await recoveryRun

    const serviceDiedDuringRun = serviceDied
    await stop(service)
    children.delete(service)
    const serviceExit = serviceDiedDuringRun ?? `exited with ${service.exitCode ?? service.signalCode} on SIGTERM`

    const disallowed = Object.keys(load.statuses).filter((status) => !ALLOWED(Number(status)))
    // Requests that never left the load generator (its connections were all busy) say how far
    // the offered rate exceeded what the service took; they are reported, not held against it.
    const serverSide = Object.fromEntries(Object.entries(load.errors).filter(([kind]) => !CLIENT_SIDE_BACKLOG.has(kind)))
    const errorCount = sum(serverSide)
    const checks = [
      { name: 'statuses only 2xx/429/503', ok: disallowed.length === 0, detail: disallowed.length === 0 ? list(load.statuses) : `also ${disallowed.map((status) => `${status} ×${load.statuses[status] ?? 0}`).join(', ')}` },
      { name: 'service stayed up', ok: serviceDiedDuringRun === undefined, detail: serviceDiedDuringRun ?? 'yes' },
      { name: 'every request sent was answered (no socket error or timeout)', ok: errorCount === 0, detail: errorCount === 0 ? 'none' : `${errorCount} of ${load.due}: ${list(serverSide)}` },
      { name: `recovered within ${RECOVERY_LIMIT_MS / 1000} s`, ok: recovery.ms !== undefined, detail: recovery.ms === undefined ? 'no' : `${recovery.ms.toFixed(0)} ms` }
    ]
    const exitCode = !(checks[0]?.ok ?? false) || !(checks[1]?.ok ?? false) ? 1 : checks.every((check) => check.ok) ? 0 : 3
    return { saturation, saturationRate, rate, load, recovery, serviceDied: serviceDiedDuringRun, serviceExit, checks, exitCode, loadBefore, loadAfter: loadavg()[0] ?? 0 }
  } finally {
    for (const child of children) child.kill('SIGKILL')
    rmSync(dir, { recursive: true, force: true })
  }
}

const ms = (value: number): string => `${value.toFixed(1)} ms`

function report (outcome: Outcome): { markdown: string, summary: string } {
  const { saturation, saturationRate, rate, load, recovery, checks, exitCode } = outcome
  const accepted = sum(Object.fromEntries(Object.entries(load.statuses).filter(([status]) => Number(status) >= 200 && Number(status) < 300)))
  const failedProbes = recovery.probes.filter((probe) => !(probe.status === 200 && probe.ms < PROBE_GOOD_MS))
  const probeStatuses: Record<string, number> = {}
  for (const probe of recovery.probes) probeStatuses[String(probe.status)] = (probeStatuses[String(probe.status)] ?? 0) + 1
  const verdict = exitCode === 0 ? 'PASS' : `FAIL (exit ${exitCode}: ${checks.filter((check) => !check.ok).map((check) => check.name).join('; ')})`
  const rows: Array<[string, string]> = [
    ['shedding threshold', `LOAD_SHED_EVENT_LOOP_DELAY_MS=${SHED_MS} (default 1000); rate limit off (RATE_LIMIT_PER_MINUTE=0); LOG_LEVEL=warn`],
    ['saturation rate', `${saturationRate.toFixed(0)} 2xx/s: closed-loop wrk -t1 -c${SATURATION_CONNECTIONS} -d${SATURATION_DURATION} GET /v1/pets?limit=20 after a 2 s warm-up (${saturation.rps.toFixed(0)} req/s, p50 ${saturation.p50}, p99 ${saturation.p99}, non-2xx ${saturation.non2xx}, errors ${saturation.errors})`],
    ['offered rate', `${rate} req/s = ${FACTOR}× saturation, open loop; 1 request in ${POST_EVERY} a POST /v1/pets, the rest GET /v1/pets?limit=20`],
    ['duration', `${SECONDS} s (schedule kept to ${load.scheduleSeconds} s); ${load.due} requests due, ${load.sent} written`],
    ['clients', `${CONNECTIONS} keep-alive connections, one request at a time each; a request waits for a free one up to ${TIMEOUT_MS / 1000} s, and as long again for its answer`],
    ['statuses', list(load.statuses)],
    ['by method', Object.entries(load.byMethod).map(([method, counts]) => `${method} ${list(counts)}`).join('; ')],
    ['accepted (2xx)', `${accepted} of ${load.due} due (${(100 * accepted / load.due).toFixed(1)} %)`],
    ['accepted latency from due time', `p50 ${ms(load.acceptedP50Ms)}, p99 ${ms(load.acceptedP99Ms)}, max ${ms(load.acceptedMaxMs)} (includes waiting for a free connection)`],
    ['accepted latency at the service', `p99 ${ms(load.acceptedServiceP99Ms)} (from the request being written to its answer)`],
    ['503 latency from due time', `p50 ${ms(load.shedP50Ms)}, p99 ${ms(load.shedP99Ms)}`],
    ['requests failed after being sent (count against)', sumExcept(load.errors, CLIENT_SIDE_BACKLOG) === 0 ? 'none' : list(Object.fromEntries(Object.entries(load.errors).filter(([kind]) => !CLIENT_SIDE_BACKLOG.has(kind))))],
    ['requests never sent (load generator backlog, reported only)', sumOnly(load.errors, CLIENT_SIDE_BACKLOG) === 0 ? 'none' : String(sumOnly(load.errors, CLIENT_SIDE_BACKLOG))],
    ['generator lag behind schedule', `p99 ${ms(load.lagP99Ms)}, max ${ms(load.lagMaxMs)}; at most ${load.maxWaiting} requests waiting for a connection`],
    ['recovery time', recovery.ms === undefined
      ? `none within ${RECOVERY_LIMIT_MS / 1000} s`
      : `${recovery.ms.toFixed(0)} ms after the overload stopped (the ${PROBE_STREAK} good probes began at ${recovery.streakStartMs?.toFixed(0) ?? '?'} ms)`],
    ['recovery probes', `${recovery.probes.length} (every ${PROBE_EVERY_MS} ms, good = 200 in < ${PROBE_GOOD_MS} ms): ${list(probeStatuses)}; ${failedProbes.length} not good` +
      (failedProbes.length === 0 ? '' : `, the first ${failedProbes.slice(0, 3).map((probe) => `${probe.status} in ${probe.ms.toFixed(0)} ms`).join(', ')}`)],
    ['service', outcome.serviceExit]
  ]
  const timeline = [
    '| s | written | 2xx | 503 | 429 | other | errors | waiting | 2xx p99 (ms) |',
    '|---|---|---|---|---|---|---|---|---|',
    ...load.timeline.map((s) => `| ${s.second} | ${s.sent} | ${s.ok} | ${s.shed} | ${s.limited} | ${s.other} | ${s.errors} | ${s.waiting} | ${s.okP99Ms} |`)
  ]
  const checkLines = checks.map((check) => `- ${check.ok ? 'ok' : 'FAILED'}: ${check.name}: ${check.detail}`)
  const markdown = [
    '# Overload benchmark results',
    '',
    `Date: ${new Date().toISOString()}. Machine: ${machine()}, Node.js ${process.version}; one-minute load average ${outcome.loadBefore.toFixed(2)} before the run, ${outcome.loadAfter.toFixed(2)} after (anything else running on these two cores skews every figure).`,
    `Command: \`npm run bench:overload\` (\`node --import tsx bench/overload.ts\`; ${ANIMALS} animals in SQLite; server ${hasTaskset ? 'pinned to core 0, wrk and the load generator to core 1' : 'not pinned'}).`,
    '',
    `Verdict: ${verdict}`,
    '',
    ...checkLines,
    '',
    '| measure | value |',
    '|---|---|',
    ...rows.map(([name, value]) => `| ${name} | ${value.replaceAll('|', '\\|')} |`),
    '',
    '## Per second of the overload and its drain',
    '',
    'Second 0 is the start of the schedule; "waiting" is how many requests waited for a free connection then.',
    '',
    ...timeline,
    ''
  ].join('\n')
  const width = Math.max(...rows.map(([name]) => name.length))
  const summary = [
    '',
    '=== overload benchmark summary ===',
    `date ${new Date().toISOString()}; machine ${machine()}; Node.js ${process.version}; load average ${outcome.loadBefore.toFixed(2)} before, ${outcome.loadAfter.toFixed(2)} after`,
    'command: node --import tsx bench/overload.ts (npm run bench:overload)',
    ...rows.map(([name, value]) => `${name.padEnd(width)}  ${value}`),
    ...checkLines,
    'written: bench/results/overload.md',
    `verdict: ${verdict}`
  ].join('\n')
  return { markdown, summary }
}

const watchdog = setTimeout(() => {
  console.error(`bench/overload.ts: still running after ${WATCHDOG_MS / 1000} s; giving up`)
  for (const child of children) child.kill('SIGKILL')
  process.exit(2)
}, WATCHDOG_MS)
watchdog.unref()

try {
  const outcome = await main()
  const { markdown, summary } = report(outcome)
  mkdirSync(join(root, 'bench', 'results'), { recursive: true })
  writeFileSync(join(root, 'bench', 'results', 'overload.md'), markdown)
  console.log('\nper second (s, written, 2xx, 503, 429, other, errors, waiting, 2xx p99 ms):')
  for (const s of outcome.load.timeline) console.log(`  ${[s.second, s.sent, s.ok, s.shed, s.limited, s.other, s.errors, s.waiting, s.okP99Ms].join('  ')}`)
  console.log(summary)
  process.exitCode = outcome.exitCode
} catch (error) {
  console.error(`bench/overload.ts could not run: ${(error as Error).stack ?? String(error)}`)
  process.exitCode = 2
}
