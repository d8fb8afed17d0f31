/**
 * npm run bench:syncs: where the time of a durable create's fdatasync goes on this machine.
 *
 * Target 4 of the benchmark compares group commit (one sync for every create that arrived
 * together) with one sync per create, so what one sync costs decides it, and that cost is the
 * host's: the disk, the filesystem and how fast a waiting core wakes up. This script runs the
 * service on SQLite pinned to core 0, 64 clients creating animals from core 1, once with group
 * commit, once with one transaction per create and once with durability off, target 4's two
 * ratios taken round by round, and reads from the kernel's trace (tracefs)
 * what every fdatasync of the write-ahead log sent to the disk and how long each step took:
 * time on the device, and time between one request's completion and the next step, when the
 * syncing thread (or the kernel worker that sends the flush) has to run again.
 *
 * Needs Linux, root, ext4 (or any filesystem with the ext4_sync_file events), wrk and taskset.
 * Writes bench/results/sync-anatomy.md.
 */
import { copyFileSync, mkdtempSync, readFileSync, rmSync, statSync, writeFileSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { seededSqlite } from './datasets.js'
import { median, startContender, stopContender, timeToFirstAnswer, wrkWhileSampling } from './measure.js'
import { hasTaskset, machine, root } from './support.js'
import { startTrace, stopTrace, tracedSyncs, tracingUnavailable, type RequestKind, type TracedSync } from './sync-trace.js'

const ANIMALS = 10_000
const CONNECTIONS = 64
const DURATION_S = Number(process.env.BENCH_DURATION_S ?? 3)
const ROUNDS = Number(process.env.BENCH_ROUNDS ?? 5)
const CLI = join(root, 'dist', 'cli', 'main.js')
const SLOW_US = 1000

interface Variant { name: string, env: Record<string, string> }
// In each round group commit runs between the two variants target 4 holds it against.
const ONE_PER_CREATE: Variant = { name: 'one transaction per create', env: { WRITE_BATCH_SIZE: '1' } }
const GROUP_COMMIT: Variant = { name: 'group commit (the default)', env: {} }
const DURABILITY_OFF: Variant = { name: 'durability off', env: { SQLITE_SYNCHRONOUS: 'off' } }
const VARIANTS: Variant[] = [ONE_PER_CREATE, GROUP_COMMIT, DURABILITY_OFF]

interface Traced { creates: number, seconds: number, syncs: TracedSync[] }

async function traceOneRun (variant: Variant, seededPath: string, key: string, dir: string): Promise<Traced> {
  const path = join(dir, `run-${Date.now()}.db`)
  copyFileSync(seededPath, path)
  const running = await startContender(() => ({
    argv: ['node', '--max-semi-space-size=4', CLI, 'serve'],
    env: { HOST: '127.0.0.1', LOG_LEVEL: 'warn', DATABASE_URL: `sqlite:${path}`, ...variant.env }
  }), true)
  try {
    await timeToFirstAnswer(running, '/v1/pets?limit=1', key)
    const load = { path: '/v1/pets', script: join(root, 'bench', 'create.lua'), env: {}, connections: CONNECTIONS, key, pinned: true }
    await wrkWhileSampling(running, { ...load, duration: '1s' })
    const inode = statSync(`${path}-wal`).ino
    startTrace()
    const measured = await wrkWhileSampling(running, { ...load, duration: `${DURATION_S}s` })
    const syncs = tracedSyncs(stopTrace(), inode)
    return { creates: measured.rps, seconds: DURATION_S, syncs }
  } finally {
    await stopContender(running)
    for (const suffix of ['', '-wal', '-shm']) rmSync(path + suffix, { force: true })
  }
}

const mean = (values: number[]): number => values.length === 0 ? NaN : values.reduce((sum, value) => sum + value, 0) / values.length
const percentile = (values: number[], share: number): number => {
  const sorted = [...values].sort((a, b) => a - b)
  return sorted[Math.min(sorted.length - 1, Math.floor(share * sorted.length))] ?? NaN
}
const us = (value: number): string => Number.isFinite(value) ? value.toFixed(0) : '–'
const percent = (share: number): string => `${(100 * share).toFixed(0)} %`

const KIND_NAMES: Record<RequestKind, string> = { data: 'log pages', metadata: 'metadata block', flush: 'cache flush' }

/** Each step of each sync, named by the requests around it: on the device, or between two requests. */
function stepTimes (syncs: TracedSync[]): Map<string, number[]> {
  const steps = new Map<string, number[]>()
  const add = (name: string, value: number): void => { steps.set(name, [...(steps.get(name) ?? []), value]) }
  for (const sync of syncs) {
    let previousEnd = 0
    let previous = 'the sync begins'
    for (const step of sync.steps) {
      // A request sent while the previous one was still on the device adds no wait of its own.
      if (step.sentUs >= previousEnd) add(`${previous} → ${KIND_NAMES[step.kind]} sent`, step.sentUs - previousEnd)
      add(`${KIND_NAMES[step.kind]} on the device`, step.doneUs - Math.max(step.sentUs, previousEnd))
      previousEnd = Math.max(previousEnd, step.doneUs)
      previous = `${KIND_NAMES[step.kind]} done`
    }
    add(`${previous} → the sync returns`, sync.durationUs - previousEnd)
  }
  return steps
}

function describeRun (variant: Variant, run: Traced): { row: string, steps: Map<string, number[]> } {
  const durations = run.syncs.map((sync) => sync.durationUs)
  const onDevice = run.syncs.map((sync) => [...stepTimes([sync])].filter(([name]) => name.endsWith('on the device')).reduce((sum, [, values]) => sum + values.reduce((x, y) => x + y, 0), 0))
  const total = durations.reduce((sum, value) => sum + value, 0)
  const slow = durations.filter((value) => value > SLOW_US)
  const withMetadata = run.syncs.filter((sync) => sync.steps.some((step) => step.kind === 'metadata')).length
  const row = [
    variant.name,
    run.creates.toFixed(0),
    (run.syncs.length / run.seconds).toFixed(0),
    (run.creates * run.seconds / Math.max(1, run.syncs.length)).toFixed(1),
    us(mean(durations)), us(percentile(durations, 0.5)), us(percentile(durations, 0.99)),
    us(mean(onDevice)),
    percent(withMetadata / Math.max(1, run.syncs.length)),
    (slow.length / run.seconds).toFixed(1),
    percent(slow.reduce((sum, value) => sum + value, 0) / Math.max(1, total)),
    percent(total / 1e6 / run.seconds)
  ].join(' | ')
  return { row: `| ${row} |`, steps: stepTimes(run.syncs) }
}

function hostFacts (databaseDir: string): string[] {
  const read = (file: string): string => { try { return readFileSync(file, 'utf8').trim() } catch { return 'unknown' } }
  const mounts = read('/proc/mounts').split('\n').map((line) => line.split(' '))
  const mount = mounts.filter(([, point = '']) => databaseDir === point || databaseDir.startsWith(point.endsWith('/') ? point : `${point}/`))
    .sort((a, b) => (b[1] ?? '').length - (a[1] ?? '').length)[0] ?? []
  const device = (mount[0] ?? '').replace('/dev/', '')
  const journal = mount[2] === 'ext4' ? read(`/sys/fs/ext4/${device}/journal_task`) : 'n/a'
  return [
    `- Machine: ${machine()}, Node.js ${process.version}, ${new Date().toISOString().slice(0, 16).replace('T', ' ')} UTC.`,
    `- Database folder on ${mount[0] ?? '?'} (${mount[2] ?? '?'}, ${mount[3] ?? '?'}); ext4 journal thread: ${journal === '<none>' ? 'none (no journal)' : journal}.`,
    `- Disk queue: scheduler ${read(`/sys/block/${device}/queue/scheduler`)}, write cache ${read(`/sys/block/${device}/queue/write_cache`)}.`,
    `- Idle cores: cpuidle driver ${read('/sys/devices/system/cpu/cpuidle/current_driver')}, guest halt polling ${read('/sys/module/haltpoll/parameters/guest_halt_poll_ns')} ns.`
  ]
}

async function main (): Promise<void> {
  const unavailable = tracingUnavailable() ?? (hasTaskset ? undefined : 'taskset is missing')
  if (unavailable !== undefined) {
    console.error(`bench:syncs cannot run here: ${unavailable}`)
    process.exitCode = 1
    return
  }
  const dir = mkdtempSync(join(tmpdir(), 'animal-store-syncs-'))
  try {
    const seeded = await seededSqlite(join(dir, 'seeded.db'), ANIMALS)
    const runs = new Map<Variant, Traced[]>(VARIANTS.map((variant) => [variant, []]))
    for (let round = 1; round <= ROUNDS; round++) {
      for (const variant of VARIANTS) {
        const run = await traceOneRun(variant, seeded.path, seeded.key, dir)
        runs.get(variant)?.push(run)
        console.log(`  round ${round}: ${variant.name}: ${run.creates.toFixed(0)} creates/s, ${run.syncs.length} syncs traced`)
      }
    }
    // The round whose creates per second is the median stands for its variant.
    const chosen = VARIANTS.map((variant) => {
      const list = runs.get(variant) ?? []
      const middle = median(list.map((run) => run.creates))
      return { variant, run: list.find((run) => run.creates === middle) ?? list[0] as Traced, all: list }
    })
    const synced = chosen.filter(({ run }) => run.syncs.length > 0)
    const ratios = (over: Variant): number[] => (runs.get(GROUP_COMMIT) ?? []).map((run, round) => run.creates / (runs.get(over)?.[round]?.creates ?? NaN))
    const listed = (values: number[], digits: number): string => values.map((value) => value.toFixed(digits)).join(', ')
    const lines = [
      '# What a durable create\'s sync costs on this machine',
      '',
      `\`npm run bench:syncs\`: the service on SQLite pinned to core 0, ${CONNECTIONS} clients creating animals from core 1 for ${DURATION_S} s, ${ANIMALS.toLocaleString('en')} animals. Every fdatasync of the write-ahead log is read from the kernel's trace (tracefs: ext4_sync_file_enter/exit, block_rq_issue/complete). ${ROUNDS} rounds; the table shows each variant's median round by creates per second.`,
      '',
      ...hostFacts(dir),
      '',
      '| variant | creates/s | syncs/s | creates per sync | sync mean µs | p50 µs | p99 µs | on the device, mean µs | syncs that wrote a metadata block | syncs > 1 ms per s | their share of sync time | time spent syncing |',
      '|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|',
      ...synced.map(({ variant, run }) => describeRun(variant, run).row),
      '',
      `Creates per second, round by round: ${chosen.map(({ variant, all }) => `${variant.name} ${listed(all.map((run) => run.creates), 0)}`).join('; ')}.`,
      '',
      `Target 4, round by round: group commit at ${listed(ratios(ONE_PER_CREATE), 2)}× one transaction per create (median ${median(ratios(ONE_PER_CREATE)).toFixed(2)}×, 10× asked) and ${listed(ratios(DURABILITY_OFF), 2)}× the rate with durability off (median ${median(ratios(DURABILITY_OFF)).toFixed(2)}×, 0.8× asked).`,
      ''
    ]
    for (const { variant, run } of synced) {
      lines.push(`## Step by step: ${variant.name}`, '', '| step | times | p50 µs | p90 µs | p99 µs | mean µs | total ms |', '|---|---:|---:|---:|---:|---:|---:|')
      const steps = [...describeRun(variant, run).steps].sort(([, a], [, b]) => b.reduce((x, y) => x + y, 0) - a.reduce((x, y) => x + y, 0))
      for (const [name, values] of steps) {
        if (values.length < run.syncs.length / 100) continue
        lines.push(`| ${name} | ${values.length} | ${us(percentile(values, 0.5))} | ${us(percentile(values, 0.9))} | ${us(percentile(values, 0.99))} | ${us(mean(values))} | ${(values.reduce((x, y) => x + y, 0) / 1000).toFixed(1)} |`)
      }
      lines.push('')
    }
    const report = lines.join('\n')
    writeFileSync(join(root, 'bench', 'results', 'sync-anatomy.md'), report)
    console.log(`\n${report}`)
  } finally {
    rmSync(dir, { recursive: true, force: true })
  }
}

await main()
