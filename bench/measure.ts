/**
 * Running one contender and measuring it: start on a free port, time to first answer, one
 * wrk run with the contender's resident memory sampled throughout, stop.
 */
import { spawn, type ChildProcess } from 'node:child_process'
import { once } from 'node:events'
import { closeSync, openSync, readFileSync, rmSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { freePort, parseWrk, pin, stop } from './support.js'

export interface Started { child: ChildProcess, pid: number, baseUrl: string, startedAt: number, logFile: string }

export interface Measurement {
  rps: number
  requests: number
  p50Ms: number
  p99Ms: number
  non2xx: number
  errors: number
  peakRssMb: number
  /**
   * CPU time (user and system) the contender's processes spent per answered request during the run.
   * On a shared host the load generator may be starved of its core and cap the rate of every contender
   * alike; what a request costs the server is measured by its own CPU time whatever the load generator
   * could send.
   */
  cpuUsPerRequest: number
  /** The share of one core the contender's processes used during the run (1 is a whole core). */
  cpuShare: number
  /** The share of one core the load generator (wrk) used during the run. */
  loadShare: number
}

/**
 * A server is saturated when it used at least this share of its core: below it, fewer requests
 * share each turn of the event loop and each system call, so a request costs it more CPU time
 * than at full load, and neither its rate nor its CPU time per request compares with a saturated
 * server's.
 */
export const SATURATED = 0.95

/**
 * The load generator is the bottleneck when it used this share of its core or more: the rate is
 * then what wrk could send, not what the server could answer.
 */
export const LOAD_GENERATOR_BOUND = 0.95

/** Why a measured read run cannot enter a ratio (the server short of its core, or wrk out of its own), or undefined when it can. */
export function unsaturated (run: Measurement): string | undefined {
  if (run.cpuShare < SATURATED) return `server at ${percent(run.cpuShare)} of its core`
  if (run.loadShare >= LOAD_GENERATOR_BOUND) return `wrk at ${percent(run.loadShare)} of its core`
  return undefined
}

export const percent = (share: number): string => Number.isFinite(share) ? `${Math.round(share * 100)} %` : 'n/a'

export const median = (values: number[]): number => {
  const sorted = [...values].sort((a, b) => a - b)
  return sorted.length === 0 ? NaN : (sorted[Math.floor((sorted.length - 1) / 2)] ?? NaN)
}

/** A pino line at warn level or above ("level":40, 50 or 60). */
const WARNING = /"level":[456]0\b/

/**
 * Starts the command `commandFor(port)` gives on a free port (also in PORT), on core 0 when pinned.
 * Its log goes to a file, as a service's log goes to a file or a log shipper (a contender logging
 * every request at info would otherwise have this process parse its lines on the load generator's
 * core); when it stops, its warnings and errors are shown on standard error, so that an answer
 * other than 2xx, such as a request shed while the host stalled, comes with its reason.
 */
export async function startContender (commandFor: (port: number) => { argv: string[], env: Record<string, string> }, pinned: boolean): Promise<Started> {
  const port = await freePort()
  const { argv, env } = commandFor(port)
  const [file = 'node', ...args] = pinned ? pin(0, argv) : argv
  const logFile = join(tmpdir(), `animal-store-bench-${port}.log`)
  const log = openSync(logFile, 'w')
  const startedAt = performance.now()
  const child = spawn(file, args, { env: { ...process.env, ...env, PORT: String(port) }, stdio: ['ignore', log, 'inherit'] })
  closeSync(log)
  return { child, pid: child.pid ?? 0, baseUrl: `http://127.0.0.1:${port}`, startedAt, logFile }
}

/** Milliseconds from spawning to the first successful answer to `path` with the key. */
export async function timeToFirstAnswer (running: Started, path: string, key: string): Promise<number> {
  const deadline = performance.now() + 30_000
  while (performance.now() < deadline) {
    if (running.child.exitCode !== null) throw new Error(`contender exited with ${running.child.exitCode}`)
    try {
      const response = await fetch(running.baseUrl + path, { headers: { authorization: `Bearer ${key}` } })
      await response.arrayBuffer()
      if (response.ok) return performance.now() - running.startedAt
    } catch {}
    await new Promise((resolve) => setTimeout(resolve, 5))
  }
  throw new Error(`${running.baseUrl}${path} did not answer within 30 s`)
}

/** Asks for every id from 1 to `count` once, `concurrency` requests at a time; throws on an answer other than 200. */
export async function askForEveryId (running: Started, path: string, key: string, count: number, concurrency = 32): Promise<void> {
  let next = 1
  const worker = async (): Promise<void> => {
    while (next <= count) {
      const response = await fetch(`${running.baseUrl}${path}${next++}`, { headers: { authorization: `Bearer ${key}` } })
      await response.arrayBuffer()
      if (response.status !== 200) throw new Error(`${path}: ${response.status}`)
    }
  }
  await Promise.all(Array.from({ length: concurrency }, worker))
}

export async function stopContender (running: Started): Promise<void> {
  await stop(running.child)
  for (const line of readFileSync(running.logFile, 'utf8').split('\n')) if (WARNING.test(line)) console.error(`  contender at ${running.baseUrl}: ${line}`)
  rmSync(running.logFile, { force: true })
}

const CLOCK_TICKS_PER_SECOND = 100

/** CPU time (user and system) of a process and all its descendants, in microseconds. */
export function treeCpuUs (pid: number): number {
  let total = 0
  try {
    const fields = readFileSync(`/proc/${pid}/stat`, 'utf8').replace(/^.*\) /, '').split(' ')
    // After the name: state is field 3, so utime (14) and stime (15) are at 11 and 12.
    total += (Number(fields[11]) + Number(fields[12])) * (1_000_000 / CLOCK_TICKS_PER_SECOND)
    const children = readFileSync(`/proc/${pid}/task/${pid}/children`, 'utf8').trim()
    for (const child of children === '' ? [] : children.split(/\s+/)) total += treeCpuUs(Number(child))
  } catch {}
  return total
}

/** Resident memory of a process and all its descendants (cluster workers), in bytes. */
function treeRss (pid: number): number {
  let total = 0
  try {
    const status = readFileSync(`/proc/${pid}/status`, 'utf8')
    total += Number(/VmRSS:\s+(\d+) kB/.exec(status)?.[1] ?? 0) * 1024
    const children = readFileSync(`/proc/${pid}/task/${pid}/children`, 'utf8').trim()
    for (const child of children === '' ? [] : children.split(/\s+/)) total += treeRss(Number(child))
  } catch {}
  return total
}

const toMs = (text: string | undefined): number => {
  const match = /^([\d.]+)(us|ms|s)$/.exec(text ?? '')
  if (!match) return NaN
  const value = Number(match[1])
  return match[2] === 'us' ? value / 1000 : match[2] === 's' ? value * 1000 : value
}

export async function wrkWhileSampling (running: Started, options: { path: string, script?: string, env: Record<string, string>, connections: number, key: string, duration: string, pinned: boolean }): Promise<Measurement> {
  const args = ['-t1', `-c${options.connections}`, `-d${options.duration}`, '--latency', '-H', `Authorization: Bearer ${options.key}`,
    ...(options.script !== undefined ? ['-s', options.script] : []), running.baseUrl + options.path]
  const [file = 'wrk', ...rest] = options.pinned ? pin(1, ['wrk', ...args]) : ['wrk', ...args]
  let peak = treeRss(running.pid)
  const cpuBefore = treeCpuUs(running.pid)
  const wallBefore = performance.now()
  const wrk = spawn(file, rest, { env: { ...process.env, ...options.env }, stdio: ['ignore', 'pipe', 'inherit'] })
  // wrk's own CPU time, read while it runs: once it has exited /proc no longer has it.
  let wrkCpuUs = 0
  const sampler = setInterval(() => {
    peak = Math.max(peak, treeRss(running.pid))
    wrkCpuUs = Math.max(wrkCpuUs, treeCpuUs(wrk.pid ?? 0))
  }, 50)
  let output = ''
  wrk.stdout.on('data', (chunk: Buffer) => { output += chunk.toString() })
  const [code] = await once(wrk, 'exit') as [number | null]
  clearInterval(sampler)
  const wallUs = (performance.now() - wallBefore) * 1000
  peak = Math.max(peak, treeRss(running.pid))
  const cpuUs = treeCpuUs(running.pid) - cpuBefore
  if (code !== 0) throw new Error(`wrk exited with ${String(code)}: ${output}`)
  const { p50, p99, ...counts } = parseWrk(output)
  return {
    ...counts,
    p50Ms: toMs(p50),
    p99Ms: toMs(p99),
    peakRssMb: peak / (1024 * 1024),
    cpuUsPerRequest: cpuUs / Math.max(1, counts.requests),
    cpuShare: cpuUs / wallUs,
    loadShare: wrkCpuUs / wallUs
  }
}
