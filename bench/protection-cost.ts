/**
 * npm run bench:protections: what each protection an operator turns on costs a cached read. For
 * each one, the service with it and the service without it (the bare profile: LOG_LEVEL=warn,
 * nothing configured) run at the same time on core 0, each loaded by its own wrk on core 1, as
 * bench/step-cost.ts does for the key lifecycle's steps: whatever else the host does slows both
 * alike. Every round starts a fresh pair of processes, and the spread of the rounds is reported
 * beside the median, because it is part of the finding: some costs vary from process to process.
 * It also measures the bare service against the ceiling the same way: what the pipeline's steps and
 * the contract's header fields cost a cached read beyond bare node:http.
 * Writes bench/results/<date>-protection-cost.md. Environment: BENCH_PROTECTION_ROUNDS (6),
 * BENCH_STEP_DURATION (4s), BENCH_REDIS_URL (redis://127.0.0.1:6379).
 */
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { seededSqlite } from './datasets.js'
import { BENCH_REDIS_URL, redisAvailable } from './redis.js'
import { PRODUCTION_ENV } from './report.js'
import { DURATION, sideBySideCost, type Side, STEP_COST_PATHS, type StepCost, type StepCostWorkload } from './step-cost.js'
import { machine, root } from './support.js'

const ROUNDS = Number(process.env.BENCH_PROTECTION_ROUNDS ?? 6)
/** High enough never to refuse the benchmark's one key: the limit is counted on every request all the same. */
const NEVER_REFUSING_LIMIT = PRODUCTION_ENV.RATE_LIMIT_PER_MINUTE ?? '100000000'

interface Protection { name: string, env: Record<string, string>, needsRedis?: boolean }

const PROTECTIONS: Protection[] = [
  { name: 'access log (`LOG_LEVEL=info`, the default)', env: { LOG_LEVEL: 'info' } },
  { name: 'CORS (`CORS_ORIGINS`, requests without `Origin`)', env: { CORS_ORIGINS: 'https://app.example.com' } },
  { name: 'rate limit counted per instance (`RATE_LIMIT_PER_MINUTE`)', env: { RATE_LIMIT_PER_MINUTE: NEVER_REFUSING_LIMIT } },
  { name: 'rate limit shared through Redis (`RATE_LIMIT_PER_MINUTE`, `REDIS_URL`)', env: { RATE_LIMIT_PER_MINUTE: NEVER_REFUSING_LIMIT, REDIS_URL: BENCH_REDIS_URL }, needsRedis: true },
  { name: 'all of them: the production profile of `npm run bench`', env: { ...PRODUCTION_ENV, REDIS_URL: BENCH_REDIS_URL }, needsRedis: true }
]

const CEILING_SCRIPT = join(root, 'bench', 'ceiling-server.mjs')

/** The median and each round's figure, for both workloads, as table cells. */
function cells (cost: StepCost): string {
  const percent = (value: number): string => `${(value * 100).toFixed(0)} %`
  return (Object.keys(STEP_COST_PATHS) as StepCostWorkload[]).map((workload) =>
    `${percent(cost[workload].cost)} (${cost[workload].rounds.map(percent).join(', ')})`).join(' | ')
}

async function main (): Promise<void> {
  const dir = mkdtempSync(join(tmpdir(), 'animal-store-protection-cost-'))
  try {
    const seeded = await seededSqlite(join(dir, 'small.sqlite'), 10_000)
    const cli = join(root, 'dist', 'cli', 'main.js')
    const withRedis = await redisAvailable()
    // Before the protections: what a bare cached read costs beyond the ceiling.
    const layers: Array<{ name: string, measured: Side, baseline: Side }> = [
      { name: 'the bare service, against the ceiling (`bench/ceiling-server.mjs`)', measured: { cli }, baseline: { script: CEILING_SCRIPT } }
    ]
    const layerRows: string[] = []
    for (const layer of layers) {
      console.log(`measuring ${layer.name} …`)
      const cost = await sideBySideCost({ measured: layer.measured, baseline: layer.baseline, sqlitePath: seeded.path, key: seeded.key, rounds: ROUNDS })
      layerRows.push(`| ${layer.name} | ${cells(cost)} |`)
    }
    const rows: string[] = []
    for (const protection of PROTECTIONS) {
      if (protection.needsRedis === true && !withRedis) {
        rows.push(`| ${protection.name} | not measured: no Redis answers at ${BENCH_REDIS_URL} | | |`)
        continue
      }
      console.log(`measuring ${protection.name} …`)
      const cost = await sideBySideCost({ measured: { cli, env: protection.env }, baseline: { cli }, sqlitePath: seeded.path, key: seeded.key, rounds: ROUNDS })
      rows.push(`| ${protection.name} | ${cells(cost)} |`)
    }
    const date = new Date().toISOString()
    const file = join(root, 'bench', 'results', `${date.slice(0, 10)}-${date.slice(11, 13)}${date.slice(14, 16)}-protection-cost.md`)
    writeFileSync(file, [
      '# What each protection costs a cached read',
      '',
      `Date: ${date}. Machine: ${machine()}, Node.js ${process.version}. Command: \`npm run bench:protections\`: for each protection, the service with it `,
      `and the bare service (LOG_LEVEL=warn, nothing configured) serve the same 10,000 animals at the same time, both pinned to core 0, each loaded by its own wrk (-t1 -c20, ${DURATION}) on core 1; ${ROUNDS} rounds, each with a fresh pair of processes.`,
      'A figure is how much more CPU time a request costs with the protection (the inverse ratio of the two rates): the median, then each round.',
      '',
      `| protection | \`GET ${STEP_COST_PATHS.list}\` | \`GET ${STEP_COST_PATHS.get}\` |`,
      '|---|---|---|',
      ...rows,
      '',
      '## The bare service against the ceiling',
      '',
      'Measured the same way, side by side: the bare service against the ceiling (`bench/ceiling-server.mjs`). A figure is how much more CPU time a request',
      'costs the service than the ceiling.',
      '',
      `| layer | \`GET ${STEP_COST_PATHS.list}\` | \`GET ${STEP_COST_PATHS.get}\` |`,
      '|---|---|---|',
      ...layerRows,
      ''
    ].join('\n'))
    console.log(`wrote ${file}`)
  } finally {
    rmSync(dir, { recursive: true, force: true })
  }
}

await main()
