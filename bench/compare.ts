/**
 * npm run bench:compare -- <git ref> [settings …]: what a cached read and a durable create cost the current
 * build against the build of another commit, both serving the same 10,000 animals at the same time on core 0,
 * each loaded by its own wrk on core 1, a fresh pair of processes in each round (bench/step-cost.ts).
 * Whatever else the host does slows both alike, so the figure holds on a busy machine where two
 * separate runs of `npm run bench` cannot be compared. The other commit is exported with
 * `git archive` into a temporary folder, given its own dependencies from its lock file and built
 * there; it must read the database schema the current build seeds. Settings given as
 * NAME=value apply to both sides (LOG_LEVEL=info, RATE_LIMIT_PER_MINUTE=…); the word `production` stands for
 * the production profile's settings of `npm run bench` (bench/report.ts: info log, rate limit through Redis, CORS).
 * As current:NAME=value a setting applies to the current build only; with the ref `current` both sides run the
 * current build, and what a setting costs is `current current:NAME=value`. The value `otlp-sink` is the URL of
 * an OTLP/HTTP receiver the tool runs, which accepts and drops what it is sent (tracing's cost). Writes
 * bench/results/<date>-compare-<ref>.md; each round's CPU time per request of each side is printed as it goes.
 * Environment: BENCH_COMPARE_ROUNDS (8), BENCH_STEP_DURATION (4s), BENCH_WARM_UP (1s, before each workload), BENCH_COMPARE_WORKLOADS (list,get,create: the workloads sent),
 * BENCH_NODE_FLAGS (Node's flags of both sides: `--max-semi-space-size=4`, as `npm start` runs the service).
 */
import { execFileSync } from 'node:child_process'
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { seededSqlite } from './datasets.js'
import { CREATE_PATH, describeNodeFlags, DURATION, sideBySideCost, STEP_COST_PATHS, WARM_UP, type StepCostWorkload } from './step-cost.js'
import { percent } from './measure.js'
import { buildAt, settingsOf } from './builds.js'
import { machine, otlpSink, root } from './support.js'

const ROUNDS = Number(process.env.BENCH_COMPARE_ROUNDS ?? 8)

async function main (): Promise<void> {
  const [ref, ...settings] = process.argv.slice(2)
  if (ref === undefined || ref.startsWith('-')) throw new Error('usage: npm run bench:compare -- <git ref or current> [NAME=value …] [current:NAME=value …]')
  const sink = await otlpSink()
  const env = settingsOf(settings, false, sink.url)
  const currentEnv = settingsOf(settings, true, sink.url)
  const same = ref === 'current'
  const commit = same ? 'current' : execFileSync('git', ['rev-parse', '--short', ref], { cwd: root, encoding: 'utf8' }).trim()
  const head = execFileSync('git', ['rev-parse', '--short', 'HEAD'], { cwd: root, encoding: 'utf8' }).trim()
  const dir = mkdtempSync(join(tmpdir(), 'animal-store-compare-'))
  try {
    const current = join(root, 'dist', 'cli', 'main.js')
    const older = same ? current : buildAt(commit, join(dir, commit))
    const seeded = await seededSqlite(join(dir, 'small.sqlite'), 10_000)
    console.log(`measuring ${head} (and what the working tree has built) against ${commit} …`)
    const cost = await sideBySideCost({ measured: { cli: older, env }, baseline: { cli: current, env: currentEnv }, sqlitePath: seeded.path, key: seeded.key, rounds: ROUNDS, creates: true })
    const date = new Date().toISOString()
    const file = join(root, 'bench', 'results', `${date.slice(0, 10)}-${date.slice(11, 13)}${date.slice(14, 16)}-compare-${commit}.md`)
    const ratio = (value: number): string => `${(1 + value).toFixed(2)}×`
    const cell = (values: number[]): string => values.length === 0 ? 'none' : values.map(ratio).join(', ')
    const rows = [...(Object.keys(STEP_COST_PATHS) as StepCostWorkload[]).map((workload) => ({ workload, name: `GET ${STEP_COST_PATHS[workload]}`, byRate: cost[workload] })), { workload: 'create' as const, name: `POST ${CREATE_PATH} (durable, 64 connections)`, byRate: undefined }]
      .filter(({ workload }) => cost.byCpu[workload].rounds.length > 0)
      .map(({ workload, name, byRate }) => {
        const byCpu = cost.byCpu[workload]
        const shares = byCpu.shares.map(percent).join(', ')
        return `| \`${name}\` | ${ratio(byCpu.cost)} | ${cell(byCpu.rounds)} | ${shares} | ${byRate === undefined ? 'n/a (waits for the disk)' : `${ratio(byRate.cost)}: ${cell(byRate.rounds)}`} |`
      })
    writeFileSync(file, [
      `# A cached read and a create: ${commit} against the current build`,
      '',
      `Date: ${date}. Machine: ${machine()}, Node.js ${process.version}. Command: \`${process.env.BENCH_NODE_FLAGS === undefined ? '' : `BENCH_NODE_FLAGS='${process.env.BENCH_NODE_FLAGS}' `}npm run bench:compare -- ${[ref, ...settings].join(' ')}\`: the build of ${commit} and the`,
      `current build (${head}) serve the same 10,000 animals at the same time, both pinned to core 0, each loaded by its own wrk (-t1 -c20, ${DURATION} after ${WARM_UP} of warm-up) on core 1;`,
      `${ROUNDS} rounds, each with a fresh pair of processes. Settings of both: ${Object.keys(env).length === 0 ? 'none beyond the bare ones (LOG_LEVEL=warn)' : Object.entries(env).map(([name, value]) => `${name}=${value}`).join(', ')}${Object.keys(currentEnv).length === Object.keys(env).length ? '' : `; of the current build only: ${Object.entries(currentEnv).filter(([name]) => env[name] === undefined).map(([name, value]) => `${name}=${value}`).join(', ')}`}; Node's flags: ${describeNodeFlags()}.`,
      `A figure is the CPU time a request costs ${commit} over what it costs the current build: the ratio of each process's own CPU time per request, the median over`,
      'the rounds and then each round, beside the share of core 0 the two servers used together. The last column is the inverse ratio of the two rates, counted only in rounds where',
      'the two kept core 0 saturated (95 % or more): on a host busy with other work they do not, and the ratio of CPU time per request stands; a create waits for the disk and never fills it.',
      '',
      `| workload | ${commit} / current, CPU per request (median) | each round | core 0 used | by rate, saturated rounds (median: each) |`,
      '|---|---:|---|---|---|',
      ...rows,
      ''
    ].join('\n'))
    console.log(`wrote ${file}`)
  } finally {
    sink.close()
    rmSync(dir, { recursive: true, force: true })
  }
}

await main()
