/** Turns the measurements of one bench run into bench/results/latest.md: targets first, then every figure. */
import { describeStepCost, type StepCost } from './step-cost.js'
import { writeFileSync } from 'node:fs'
import type { Contender, WorkloadName } from './run.js'
import { LOAD_GENERATOR_BOUND, median, percent, SATURATED, unsaturated, type Measurement } from './measure.js'
import type { HostConditions } from './support.js'

export interface ReportInput {
  file: string
  date: string
  machine: string
  /** The host probed at the start and at the end of the run. */
  host: [HostConditions, HostConditions]
  command: string
  contenders: Contender[]
  workloads: Record<WorkloadName, string>
  results: Map<string, Measurement[]>
  startupMs: number
  /** What the key lifecycle's steps cost (bench/step-cost.ts); absent when BENCH_ONLY left them out. */
  keySteps: StepCost | undefined
  large: number
  /** How long the whole run took, seeding included. */
  minutes: number
}

/** A target: its name, the figure measured, and whether it is met (undefined: not judged, the run was not valid for it). */
type Target = [string, string, boolean | undefined]
/** A ratio judged only over valid rounds (NaN when fewer than two), and how the rounds went. */
interface Judged { value: number, detail: string }

export const CEILING = 'ceiling (bare node:http)'
/** The ceiling keeping each create in a log file: one fdatasync per create, one per batch, none. */
export const CEILING_SYNCED_EACH = `${CEILING}, each create synced alone`
export const CEILING_SYNCED = `${CEILING}, one sync per batch`
export const CEILING_WRITTEN = `${CEILING}, creates written, not synced`
const RSS_LIMIT_MB = 120

/** The service with its defaults, and as an operator who turns every protection on runs it. */
export const AS_SHIPPED = 'animal-store SQLite, as shipped'
export const PRODUCTION = 'animal-store SQLite, production profile'
/**
 * The production profile: a per-key rate limit shared through Redis (high enough never to refuse
 * the benchmark's one key: the limiting is counted on every request all the same), CORS for one
 * origin, metrics on (the default) and the access log at info (the default).
 */
export const PRODUCTION_ENV: Record<string, string> = {
  LOG_LEVEL: 'info',
  RATE_LIMIT_PER_MINUTE: '100000000',
  REDIS_URL: process.env.BENCH_REDIS_URL ?? 'redis://127.0.0.1:6379',
  CORS_ORIGINS: 'https://app.example.com'
}

export function writeReport (input: ReportInput): void {
  const { contenders, workloads, results } = input
  const runs = (contender: string, workload: WorkloadName): Measurement[] => results.get(`${contender}|${workload}`) ?? []
  const of = (contender: string, workload: WorkloadName, field: 'rps' | 'p50Ms' | 'p99Ms' | 'peakRssMb'): number => median(runs(contender, workload).map((run) => run[field]))
  const large = (name: string): string => `${name}, ${input.large.toLocaleString('en')} animals`
  const sqlite = 'animal-store SQLite'
  const fixed = (value: number, digits = 2): string => Number.isFinite(value) ? value.toFixed(digits) : 'n/a'
  /** A ratio beside its target's line, with a third digit when two would round it onto the line (0.6476 is no 0.65). */
  const against = (value: number, line: number): string => fixed(value, Number(value.toFixed(2)) === line && value !== line ? 3 : 2)

  /** Each round's ratio of two contenders' rates: runs of one round are seconds apart, rounds minutes. */
  const roundRatios = (contender: string, other: string, workload: WorkloadName, otherWorkload = workload, field: 'rps' | 'p99Ms' = 'rps'): number[] => {
    const theirs = runs(other, otherWorkload)
    return runs(contender, workload).map((run, index) => run[field] / (theirs[index]?.[field] ?? NaN)).filter(Number.isFinite)
  }
  /** The deep walk's p99 against the same walk on the small catalogue, paired round by round like every rate. */
  const walkP99Ratios = roundRatios(large(sqlite), sqlite, 'status', 'status', 'p99Ms')
  const pairedRatio = (contender: string, other: string, workload: WorkloadName, otherWorkload = workload): number =>
    median(roundRatios(contender, other, workload, otherWorkload))
  // The mixed workload is compared with the ceiling's read rate, which the ceiling's mixed runs measure.
  const ratio = (contender: string, workload: WorkloadName): number => pairedRatio(contender, CEILING, workload)

  /**
   * A ratio of rates that counts only over the rounds where it means something: the baseline's
   * run saturated its core (and wrk did not run out of its own), and so did the contender's when
   * `bothSaturated` (reads; a create waits for the disk, so the service may idle while the
   * baseline does not). A target is judged on the median of at least two such rounds.
   */
  const saturatedRatio = (contender: string, baseline: string, workload: WorkloadName, bothSaturated: boolean): Judged => {
    const theirs = runs(baseline, workload)
    const reasons: string[] = []
    const valid: Array<{ ratio: number, ours: Measurement, base: Measurement }> = []
    runs(contender, workload).forEach((ours, index) => {
      const base = theirs[index]
      if (base === undefined) return
      const why = unsaturated(base) ?? (bothSaturated ? unsaturated(ours) : undefined)
      if (why === undefined) valid.push({ ratio: ours.rps / base.rps, ours, base })
      else reasons.push(`round ${index + 1}: ${why}`)
    })
    const shares = valid.length === 0
      ? ''
      : `; baseline ${fixed(median(valid.map((round) => round.base.rps)), 0)}/s at ${percent(median(valid.map((round) => round.base.cpuShare)))}, contender at ${percent(median(valid.map((round) => round.ours.cpuShare)))} of its core`
    const skipped = reasons.length === 0 ? '' : `; left out: ${reasons.join(', ')}`
    return { value: valid.length >= 2 ? median(valid.map((round) => round.ratio)) : NaN, detail: `${valid.length} saturated rounds${shares}${skipped}` }
  }
  /** A target row for a ratio judged at saturation: not judged on fewer than two valid rounds. */
  const atLeastSaturated = (name: string, judged: Judged, line: number): Target =>
    Number.isFinite(judged.value)
      ? [name, `${against(judged.value, line)}× (${judged.detail})`, judged.value >= line]
      : [name, `not judged (${judged.detail})`, undefined]
  const largeWorkloads = (name: string): WorkloadName[] => contenders.find((c) => c.name === name)?.workloads ?? []
  const peakLarge = Math.max(...[large(sqlite), large('animal-store PostgreSQL')].flatMap((name) => largeWorkloads(name).map((w) => of(name, w, 'peakRssMb'))).filter(Number.isFinite))
  const ceilingLists = runs(CEILING, 'list').map((run) => run.rps)
  const [slowest = '', fastest = ''] = [Math.min(...ceilingLists), Math.max(...ceilingLists)].map((rps) => fixed(rps, 0))
  const ceilingSpread = ceilingLists.length === 0
    ? ''
    : ` The ceiling answered ${slowest === fastest ? slowest : `${slowest}–${fastest}`} lists a second${ceilingLists.length > 1 ? ' from one round to the next' : ''}.`
  const allRuns = [...results.values()].flat()
  const bad = allRuns.reduce((sum, run) => sum + run.non2xx + run.errors, 0)
  const ourBad = [...results.entries()].filter(([id]) => id.startsWith('animal-store')).flatMap(([, r]) => r).reduce((sum, run) => sum + run.non2xx + run.errors, 0)

  /** A target row for a ratio held to a line: the ratio printed beside the line, and whether it holds. */
  const atLeast = (name: string, value: number, line: number): Target => [name, `${against(value, line)}×`, value >= line]
  const walkP99 = median(walkP99Ratios)
  const targets: Target[] = [
    atLeastSaturated(`2. status filter following next links, ${input.large.toLocaleString('en')} animals: ≥ 0.50× ceiling`, saturatedRatio(large(sqlite), CEILING, 'status', true), 0.5),
    ['2. … p99 within 1.2× of the same on 10,000 animals', `${against(walkP99, 1.2)}× (medians ${fixed(of(large(sqlite), 'status', 'p99Ms'))} ms vs ${fixed(of(sqlite, 'status', 'p99Ms'))} ms)`, walkP99 <= 1.2],
    atLeast('4. durable creates: ≥ 10× one transaction per create', pairedRatio(sqlite, `${sqlite}, one transaction per create`, 'post'), 10),
    atLeast('4. … and ≥ 0.8× the rate with durability off', pairedRatio(sqlite, `${sqlite}, durability off`, 'post'), 0.8),
    atLeastSaturated('5. mixed 90 % reads / 10 % creates: ≥ 0.40× the ceiling\'s read rate (by rate)', saturatedRatio(sqlite, CEILING, 'mixed', false), 0.4),
    [`6. peak RSS ≤ ${RSS_LIMIT_MB} MB in every workload at ${input.large.toLocaleString('en')} animals`, `${fixed(peakLarge, 0)} MB at most`, peakLarge <= RSS_LIMIT_MB],
    [`6. start-up to first answered request on ${input.large.toLocaleString('en')} animals ≤ 1 s`, `${fixed(input.startupMs, 0)} ms`, input.startupMs <= 1000],
    atLeastSaturated('7. production profile, `GET /v1/pets?limit=20`: ≥ 0.55× ceiling', saturatedRatio(PRODUCTION, CEILING, 'list', true), 0.55),
    atLeastSaturated('7. production profile, `GET /v1/pets/{random id}`: ≥ 0.55× ceiling', saturatedRatio(PRODUCTION, CEILING, 'get', true), 0.55),
    atLeastSaturated('7. production profile, durable creates: ≥ 0.50× ceiling (by rate: a create waits for the disk)', saturatedRatio(PRODUCTION, CEILING, 'post', false), 0.5),
    atLeastSaturated('7. bare profile, `GET /v1/pets?limit=20`: ≥ 0.72× ceiling', saturatedRatio(sqlite, CEILING, 'list', true), 0.72),
    atLeastSaturated('7. bare profile, `GET /v1/pets/{random id}`: ≥ 0.72× ceiling', saturatedRatio(sqlite, CEILING, 'get', true), 0.72),
    ...(['list', 'get'] as WorkloadName[]).map((workload) =>
      atLeastSaturated(`7. production profile at most 15 % below bare, ${workload}: ≥ 0.85× bare`, saturatedRatio(PRODUCTION, sqlite, workload, true), 0.85)),
    ...(['list', 'get'] as const).map((workload): Target => {
      const cost = input.keySteps?.[workload].cost ?? NaN
      return [`8. scope check and usage count cost ≤ 3 % of a cached read, ${workload} (side by side on one saturated core)`, `${fixed(cost * 100, 1)} %`, Number.isFinite(cost) ? cost <= 0.03 : undefined]
    }),
    ['no non-2xx answers or socket errors from animal-store', `${ourBad}`, ourBad === 0]
  ]

  const lines = [
    '# Benchmark results',
    '',
    `Date: ${input.date}. Machine: ${input.machine}, Node.js ${process.version}.`,
    `Command: \`${input.command}\`. The whole run took ${input.minutes.toFixed(1)} minutes.`,
    '',
    `Host at the start and the end of the run (\`bench/host-probe.mjs\`, on core 0): a 4 KB fdatasync took ${input.host.map(({ syncUs }) => fixed(syncUs, 0)).join(' and ')} µs (median of 300), encoding and decoding a 20-animal page 2,000 times took ${input.host.map(({ cpuMs }) => fixed(cpuMs, 1)).join(' and ')} ms (median of 7).${ceilingSpread}`,
    '',
    '## Targets',
    '',
    '| target | measured | met |',
    '|---|---|---|',
    ...targets.map(([name, value, met]) => `| ${name} | ${value} | ${met === undefined ? '**not judged**' : met ? 'yes' : '**no**'} |`),
    '',
    ...(input.keySteps === undefined
      ? []
      : [
          '## The key lifecycle steps',
          '',
          'The service and a build without its authorization and key usage steps (`bench/without-steps.ts`) served the 10,000 animals at the same time, both pinned to core 0, each loaded by its own wrk on core 1 (`bench/step-cost.ts`): the ratio of their rates is the inverse ratio of what a request costs each, whatever else the host did meanwhile.',
          '',
          '| workload | extra CPU time per request (median) | each round |',
          '|---|---:|---|',
          ...describeStepCost(input.keySteps),
          ''
        ]),
    '## Every measurement',
    '',
    `Medians over the rounds; × ceiling is the median of each round's ratio to the ceiling, and every other ratio (the deep walk's p99 included) is a median of ratios within rounds too. The ceiling creates nothing: its row under the mixed load is its \`GET /v1/pets?limit=20\` rate, measured in the same round as the mixed runs. CPU share is the share of one core the contender's processes used during the run, wrk the share of its own core that the load generator used (medians). A target counts a round only when the ceiling used at least ${percent(SATURATED)} of its core and wrk less than ${percent(LOAD_GENERATOR_BOUND)} of its own, and for reads the contender too; a target with fewer than two such rounds is not judged. CPU µs/request is informative only: it is not compared across contenders, since an unsaturated server spends more CPU time per request.`,
    '',
    '| workload | contender | req/s | × ceiling | CPU share | wrk | CPU µs/request | p50 | p99 | peak RSS | non-2xx / errors |',
    '|---|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|'
  ]
  for (const workload of Object.keys(workloads) as WorkloadName[]) {
    let first = true
    for (const contender of contenders) {
      const measured = runs(contender.name, workload)
      if (measured.length === 0) continue
      const rps = of(contender.name, workload, 'rps')
      const problems = `${measured.reduce((sum, run) => sum + run.non2xx, 0)} / ${measured.reduce((sum, run) => sum + run.errors, 0)}`
      lines.push(`| ${first ? workloads[workload] : ''} | ${contender.name} | ${rps.toFixed(0)} | ${fixed(ratio(contender.name, workload))} | ${percent(median(measured.map((run) => run.cpuShare)))} | ${percent(median(measured.map((run) => run.loadShare)))} | ${fixed(median(measured.map((run) => run.cpuUsPerRequest)), 1)} | ${fixed(of(contender.name, workload, 'p50Ms'))} ms | ${fixed(of(contender.name, workload, 'p99Ms'))} ms | ${fixed(of(contender.name, workload, 'peakRssMb'), 0)} MB | ${problems} |`)
      first = false
    }
  }
  const metricsOff = `${sqlite}, metrics off`
  const costs = (['list', 'status', 'get', 'post'] as WorkloadName[])
    .filter((workload) => runs(metricsOff, workload).length > 0)
    .map((workload) => `${workload} ${fixed(100 * (1 - pairedRatio(sqlite, metricsOff, workload)), 1)} %`)
  const one = 'animal-store SQLite, 1 worker, unpinned'
  const two = 'animal-store SQLite, 2 workers, unpinned'
  lines.push(
    '',
    '## Notes',
    '',
    `- Deep walk p99 on ${input.large.toLocaleString('en')} animals against 10,000, round by round: ${walkP99Ratios.map((value) => fixed(value)).join(', ')}×.`,
    `- Group commit, round by round: ${roundRatios(sqlite, `${sqlite}, one transaction per create`, 'post').map((value) => fixed(value)).join(', ')}× one transaction per create; ${roundRatios(sqlite, `${sqlite}, durability off`, 'post').map((value) => fixed(value)).join(', ')}× the rate with durability off.`,
    `- What durability allows on this machine: the ceiling, appending each create to a log file and answering only then, with the same group commit, ran at ${fixed(pairedRatio(CEILING_SYNCED, CEILING_SYNCED_EACH, 'post'))}× its rate with each create synced alone and ${fixed(pairedRatio(CEILING_SYNCED, CEILING_WRITTEN, 'post'))}× its rate with nothing synced (round by round: ${roundRatios(CEILING_SYNCED, CEILING_WRITTEN, 'post').map((value) => fixed(value)).join(', ')}×). These two ratios are what target 4 asks of the service, for a server that does nothing else.`,
    `- Profiles, against the bare service (LOG_LEVEL=warn, nothing configured), paired round by round: as shipped (the defaults, LOG_LEVEL=info) ${(['list', 'get', 'post'] as WorkloadName[]).map((workload) => `${workload} ${fixed(pairedRatio(AS_SHIPPED, sqlite, workload))}×`).join(', ')}; production (${Object.entries(PRODUCTION_ENV).filter(([name]) => name !== 'REDIS_URL').map(([name, value]) => `${name}=${value}`).join(', ')}, REDIS_URL, metrics on) ${(['list', 'get', 'post'] as WorkloadName[]).map((workload) => `${workload} ${fixed(pairedRatio(PRODUCTION, sqlite, workload))}×`).join(', ')}.`,
    `- Cost of metrics (throughput lost with METRICS_ENABLED=true against false, same run; negative means the metrics run was faster, i.e. noise): ${costs.join('; ')}.`,
    `- More cores (WEB_CONCURRENCY, server and wrk unpinned on this ${input.machine} machine): list ${fixed(pairedRatio(two, one, 'list'))}× and creates ${fixed(pairedRatio(two, one, 'post'))}× from 1 to 2 workers. wrk needs a core of its own, so two workers here share two cores with the load generator.`,
    '- Creates are durable: each 201 is sent after its group-committed transaction is on disk (SQLite: WAL, synced by an fdatasync that began after the commit, as synchronous=FULL would; PostgreSQL: its own fsync settings). "Durability off" is SQLITE_SYNCHRONOUS=off; "one transaction per create" is WRITE_BATCH_SIZE=1, each create committed and synced alone.',
    '- json-server 0.17 has no status index and writes its whole JSON file on every create; it sends no Link header, so its status run re-reads the first page.',
    `- Non-2xx or socket errors over every run, all contenders: ${bad}.`,
    ''
  )
  writeFileSync(input.file, lines.join('\n'))
  console.log('\n' + lines.join('\n'))
}
