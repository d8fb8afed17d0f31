/**
 * What the benchmarks share: core pinning, seeding a store, starting and stopping the
 * service, waiting for it to answer, and one wrk run.
 */
import { execFileSync, spawn, type ChildProcess } from 'node:child_process'
import { once } from 'node:events'
import { closeSync, fsyncSync, openSync } from 'node:fs'
import { createServer as createHttpServer } from 'node:http'
import { createServer, type AddressInfo } from 'node:net'
import { cpus } from 'node:os'
import { join } from 'node:path'
import { createAccount, createApiKey } from '../src/services/accounts.js'
import type { Store } from '../src/storage/store.js'
import { eventually } from '../test/helpers/eventually.js'

export const root = join(import.meta.dirname, '..')

export const hasTaskset = (() => { try { execFileSync('taskset', ['-V'], { stdio: 'ignore' }); return true } catch { return false } })()

/** The command run on one core when taskset exists and there is more than one core. */
export const pin = (core: number, command: string[]): string[] => (hasTaskset && cpus().length > 1 ? ['taskset', '-c', String(core), ...command] : command)

/** Migrates the store, inserts `animals` pets, creates an account and returns a fresh API key. Closes the store. */
export async function seed (store: Store, animals: number): Promise<string> {
  await store.migrate()
  const statuses = ['available', 'pending', 'sold'] as const
  await Promise.all(Array.from({ length: animals }, (_, i) =>
    store.pets.insert({ name: `animal ${i + 1}`, categoryId: (i % 50) + 1, status: statuses[i % 3] })))
  await createAccount(store, { email: 'bench@example.com' })
  const { key } = await createApiKey(store, { email: 'bench@example.com', label: 'bench' })
  await store.close()
  return key
}

/** Starts a process on core 0 with its standard error shown. */
export function startProcess (command: string[], env: Record<string, string>): ChildProcess {
  const [file, ...args] = pin(0, command)
  return spawn(file ?? 'node', args, { env: { ...process.env, ...env }, stdio: ['ignore', 'ignore', 'inherit'] })
}

export async function stop (child: ChildProcess): Promise<void> {
  if (child.exitCode !== null || child.signalCode !== null) return
  child.kill('SIGTERM')
  await once(child, 'exit')
}

/** Polls until the server answers: the bench is no test, and a started process logs nothing at warn level. */
export async function waitForHttp (url: string): Promise<void> {
  await eventually(async () => await fetch(url + '/v1/openapi.json'), { timeout: 10_000, interval: 50 })
}

export interface WrkResult { rps: number, requests: number, p50: string, p99: string, non2xx: number, errors: number }

/** One closed-loop wrk run (one thread) pinned to core 1. */
export function wrk (options: { url: string, key: string, connections: number, duration: string, animals: number, script?: string }): WrkResult {
  const scriptArgs = options.script ? ['-s', options.script] : []
  const command = pin(1, ['wrk'])
  const output = execFileSync(command[0] ?? 'wrk', [...command.slice(1), '-t1', `-c${options.connections}`, `-d${options.duration}`, '--latency',
    '-H', `Authorization: Bearer ${options.key}`, ...scriptArgs, options.url], { encoding: 'utf8', env: { ...process.env, BENCH_ANIMALS: String(options.animals) } })
  return parseWrk(output)
}

/** The figures of one wrk --latency report; the percentile lines are matched at line start (a "+/- Stdev" of 95.50% is no median). */
export function parseWrk (output: string): WrkResult {
  const errorsMatch = /Socket errors: connect (\d+), read (\d+), write (\d+), timeout (\d+)/.exec(output)
  return {
    rps: Number(/Requests\/sec:\s+([\d.]+)/.exec(output)?.[1] ?? 0),
    requests: Number(/(\d+) requests in /.exec(output)?.[1] ?? 0),
    p50: /^\s*50%\s+(\S+)/m.exec(output)?.[1] ?? '?',
    p99: /^\s*99%\s+(\S+)/m.exec(output)?.[1] ?? '?',
    non2xx: Number(/Non-2xx or 3xx responses:\s+(\d+)/.exec(output)?.[1] ?? 0),
    errors: errorsMatch ? errorsMatch.slice(1).reduce((sum, n) => sum + Number(n), 0) : 0
  }
}

/** A free TCP port on 127.0.0.1 at the time of asking. */
export async function freePort (): Promise<number> {
  const server = createServer()
  server.listen(0, '127.0.0.1')
  await once(server, 'listening')
  const { port } = server.address() as AddressInfo
  server.close()
  await once(server, 'close')
  return port
}

/** Writes a file's dirty pages out now, so that the kernel does not write them back during a later measurement. */
export function syncToDisk (path: string): void {
  const fd = openSync(path, 'r+')
  try {
    fsyncSync(fd)
  } finally {
    closeSync(fd)
  }
}

export interface HostConditions { syncUs: number, cpuMs: number }

/** A 4 KB fdatasync and a fixed piece of JavaScript, timed on core 0 by bench/host-probe.mjs (its comment says why). */
export function hostConditions (scratchFile: string): HostConditions {
  const [file = 'node', ...args] = pin(0, ['node', join(root, 'bench', 'host-probe.mjs'), scratchFile])
  return JSON.parse(execFileSync(file, args, { encoding: 'utf8' })) as HostConditions
}

/** "2 × Intel(R) Xeon(R) Processor" */
export const machine = (): string => `${cpus().length} × ${cpus()[0]?.model ?? 'unknown CPU'}`

/** An OTLP/HTTP receiver that accepts whatever it is sent and drops it; its URL. */
export async function otlpSink (): Promise<{ url: string, close: () => void }> {
  const sink = createHttpServer((request, response) => {
    request.resume().on('end', () => { response.writeHead(200, { 'content-type': 'application/json' }).end('{}') })
  })
  await new Promise<void>((resolve) => sink.listen(0, '127.0.0.1', resolve))
  return { url: `http://127.0.0.1:${(sink.address() as AddressInfo).port}`, close: () => { sink.close() } }
}
