/**
 * npm run bench:instructions: what one request costs in CPU instructions, counted by valgrind's
 * callgrind (Debian package `valgrind`) rather than timed. The count does not depend on what else
 * the machine is doing, so it compares two versions of the code, or the service with the ceiling,
 * on a busy host where timings cannot. It counts the process's own instructions (JavaScript,
 * V8, Node, libuv, SQLite), not the kernel's (socket reads and writes).
 *
 * Each contender runs twice under callgrind: start-up, a warm-up of WARM_UP requests (caches
 * filled, code optimised), then FEW or MANY requests; the difference of the two totals divided by
 * MANY - FEW is the cost of one request, start-up and warm-up cancelled out. Repeated runs agree
 * within about 2 % for reads (background compilation and garbage collection land in either run).
 * Creates agree within about 5 %: how many of them share a commit varies from run to run (about
 * 28 under valgrind, against 64 in the timed benchmark), and a commit's own cost is shared among them.
 * BENCH_ONLY=POST (any part of a workload's name) counts only the workloads that match.
 *
 * `npm run bench:instructions -- <git ref or current> [settings …]` counts the build of that commit
 * against the current build instead of the ceiling against the service, with the settings as
 * `npm run bench:compare` takes them (bench/builds.ts): `production`, NAME=value, current:NAME=value.
 * What `current current:OTEL_EXPORTER_OTLP_ENDPOINT=otlp-sink` counts is what tracing costs.
 * Writes bench/results/<date>-instructions.md.
 */
import { spawn } from 'node:child_process'
import { copyFileSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs'
import { Agent, request } from 'node:http'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { buildAt, settingsOf } from './builds.js'
import { seededSqlite } from './datasets.js'
import { freePort, machine, otlpSink, root, stop } from './support.js'

const ANIMALS = 10_000
// Every animal of the catalogue asked for once before counting: the counted requests all hit the cache.
const WARM_UP = 12_000
const FEW = 2000
const MANY = 12_000
/** Under valgrind on a busy host, a start-up can take minutes. */
const START_UP_DEADLINE_MS = 15 * 60_000

interface Workload {
  name: string
  path: (i: number) => string
  /** A create when present: POSTed as JSON. */
  body?: string
  connections: number
}
const CREATE_BODY = '{"name":"Bench","categoryId":1,"status":"available"}'
const ALL_WORKLOADS: Workload[] = [
  { name: 'GET /v1/pets?limit=20', path: () => '/v1/pets?limit=20', connections: 8 },
  // Ids spread over the catalogue, as the random-id benchmark asks for them.
  { name: 'GET /v1/pets/{id}', path: (i) => `/v1/pets/${1 + ((i * 7919) % ANIMALS)}`, connections: 8 },
  // As many clients as the create benchmark, so a group commit carries as many creates.
  { name: 'POST /v1/pets', path: () => '/v1/pets', body: CREATE_BODY, connections: 64 }
]
const WORKLOADS = ALL_WORKLOADS.filter((workload) => workload.name.includes(process.env.BENCH_ONLY ?? ''))

/** `count` requests over the workload's keep-alive connections; every answer must be a 200 (201 for a create). */
async function send (port: number, key: string, workload: Workload, count: number): Promise<void> {
  const agent = new Agent({ keepAlive: true, maxSockets: workload.connections })
  const { body } = workload
  const expected = body === undefined ? 200 : 201
  const headers = { authorization: `Bearer ${key}`, ...(body !== undefined && { 'content-type': 'application/json' }) }
  let next = 0
  const one = async (path: string): Promise<void> => await new Promise((resolve, reject) => {
    request({ host: '127.0.0.1', port, path, agent, method: body === undefined ? 'GET' : 'POST', headers }, (response) => {
      response.resume()
      response.on('end', () => { response.statusCode === expected ? resolve() : reject(new Error(`${path}: ${response.statusCode}`)) })
    }).on('error', reject).end(body)
  })
  await Promise.all(Array.from({ length: workload.connections }, async () => {
    while (next < count) await one(workload.path(next++))
  }))
  agent.destroy()
}

/** Total instructions of one process: start-up, the warm-up and `count` requests, until it exits. */
async function countInstructions (command: string[], env: Record<string, string>, key: string, workload: Workload, count: number, dir: string): Promise<number> {
  const port = await freePort()
  const out = join(dir, `callgrind-${port}.out`)
  const child = spawn('valgrind', ['--tool=callgrind', '--vgdb=no', `--callgrind-out-file=${out}`, ...command], {
    env: { ...process.env, ...env, HOST: '127.0.0.1', PORT: String(port) },
    stdio: ['ignore', 'ignore', 'ignore']
  })
  try {
    // Under valgrind, start-up takes seconds where it takes a fraction of one.
    const deadline = performance.now() + START_UP_DEADLINE_MS
    for (;;) {
      try {
        await send(port, key, { name: 'ready', path: () => '/v1/pets?limit=1', connections: 1 }, 1)
        break
      } catch (error) {
        if (performance.now() > deadline) throw error
        await new Promise((resolve) => setTimeout(resolve, 100))
      }
    }
    await send(port, key, workload, WARM_UP)
    await send(port, key, workload, count)
  } finally {
    await stop(child)
  }
  const total = /^(?:summary|totals):\s+(\d+)/m.exec(readFileSync(out, 'utf8'))?.[1]
  if (total === undefined) throw new Error(`no instruction total in ${out}`)
  return Number(total)
}

interface Contender { name: string, command: string[], env: Record<string, string> }

/** The service as `npm start` runs it; under valgrind every turn is slow, so load shedding is off. */
const service = (name: string, cli: string, env: Record<string, string>): Contender =>
  ({ name, command: ['node', '--max-semi-space-size=4', cli, 'serve'], env: { LOG_LEVEL: 'warn', LOAD_SHED_EVENT_LOOP_DELAY_MS: '0', ...env } })

const [ref, ...settings] = process.argv.slice(2)
const dir = mkdtempSync(join(tmpdir(), 'animal-store-instructions-'))
const sink = await otlpSink()
try {
  const seeded = await seededSqlite(join(dir, 'seeded.sqlite'), ANIMALS)
  const current = join(root, 'dist', 'cli', 'main.js')
  const contenders: Contender[] = ref === undefined
    ? [
        { name: 'ceiling (bare node:http)', command: ['node', join(root, 'bench', 'ceiling-server.mjs')], env: { BENCH_KEY: seeded.key } },
        service('animal-store SQLite', current, {})
      ]
    : [
        service(ref, ref === 'current' ? current : buildAt(ref, join(dir, 'build')), settingsOf(settings, false, sink.url)),
        service('current', current, settingsOf(settings, true, sink.url))
      ]
  const heading = `Instructions per request (callgrind; ${FEW} and ${MANY} requests after ${WARM_UP} of warm-up, 8 connections for reads and 64 for creates, ${ANIMALS} animals)${ref === undefined ? '' : `: ${[ref, ...settings].join(' ')}`}`
  console.log(`${heading}\n`)
  const rows: string[] = []
  for (const workload of WORKLOADS) {
    const perRequest: number[] = []
    for (const contender of contenders) {
      const totals: number[] = []
      for (const count of [FEW, MANY]) {
        const copy = join(dir, `copy-${count}.sqlite`)
        copyFileSync(seeded.path, copy)
        totals.push(await countInstructions(contender.command, { ...contender.env, DATABASE_URL: `sqlite:${copy}` }, seeded.key, workload, count, dir))
      }
      const [few = NaN, many = NaN] = totals
      perRequest.push((many - few) / (MANY - FEW))
      console.log(`${workload.name.padEnd(24)} ${contender.name.padEnd(26)} ${Math.round((many - few) / (MANY - FEW)).toLocaleString('en').padStart(8)}`)
    }
    const [first = NaN, second = NaN] = perRequest
    console.log(`${workload.name.padEnd(24)} ${`${contenders[0]?.name ?? ''} / ${contenders[1]?.name ?? ''}`.padEnd(26)} ${(first / second).toFixed(3).padStart(8)}\n`)
    rows.push(`| \`${workload.name}\` | ${Math.round(first).toLocaleString('en')} | ${Math.round(second).toLocaleString('en')} | ${(first / second).toFixed(3)} |`)
  }
  const date = new Date().toISOString()
  const file = join(root, 'bench', 'results', `${date.slice(0, 10)}-${date.slice(11, 13)}${date.slice(14, 16)}-instructions.md`)
  writeFileSync(file, [
    `# Instructions per request, ${contenders.map((contender) => contender.name).join(' and ')}`,
    '',
    `Date: ${date}. Machine: ${machine()}, Node.js ${process.version}. Command: \`npm run bench:instructions${ref === undefined ? '' : ` -- ${[ref, ...settings].join(' ')}`}\`. ${heading}.`,
    'The service runs at LOG_LEVEL=warn unless a setting says otherwise; the ceiling answers a create at once and keeps nothing.',
    '',
    `| workload | ${contenders.map((contender) => contender.name).join(' | ')} | ratio |`,
    '|---|---:|---:|---:|',
    ...rows,
    ''
  ].join('\n'))
  console.log(`wrote ${file}`)
} finally {
  sink.close()
  rmSync(dir, { recursive: true, force: true })
}
