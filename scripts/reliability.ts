/**
 * npm run reliability: the long trials that npm test only samples, with their figures
 * written to bench/results/reliability.md, beside the overload benchmark's.
 *   1. test/process/crash-durability.test.ts with CRASH_TRIALS=50 (SQLite and PostgreSQL);
 *   2. the fuzz tests (test/http/fuzz-*.test.ts) with FUZZ_RUNS=50000 each (FUZZ_PORTAL_RUNS=2000 for the portal's forms);
 *   3. bench/overload.ts, when the file exists;
 *   4. scripts/attack.ts: the outside attack replayed on both engines (0 cases may differ).
 * Each runs as a child process whose TAP (or printed) output is shown live and parsed.
 * Exits 1 if any part fails; a part whose file does not exist is reported as skipped.
 */
import { spawn } from 'node:child_process'
import { once } from 'node:events'
import { existsSync, mkdirSync, mkdtempSync, readdirSync, writeFileSync } from 'node:fs'
import { cpus, loadavg, release, tmpdir, totalmem, type as osType } from 'node:os'
import { join } from 'node:path'

const root = join(import.meta.dirname, '..')
const RESULTS = join(root, 'bench', 'results', 'reliability.md')
const CRASH_TEST = 'test/process/crash-durability.test.ts'
/** The fuzz tests, one file per surface of the API (and the portal's forms). */
const FUZZ_TESTS = readdirSync(join(root, 'test', 'http')).filter((file) => /^fuzz-.*\.test\.ts$/.test(file)).sort().map((file) => `test/http/${file}`)
const OVERLOAD_BENCH = 'bench/overload.ts'
const ATTACK = 'scripts/attack.ts'
const CRASH_TRIALS = 50
const FUZZ_RUNS = 50_000
const FUZZ_PORTAL_RUNS = 2_000
const logDir = mkdtempSync(join(tmpdir(), 'animal-store-reliability-'))

interface Run { command: string, code: number | null, signal: NodeJS.Signals | null, output: string, seconds: number }

/** Runs `node args` in the project root with extra environment, echoing and keeping its output. */
async function run (name: string, args: string[], env: Record<string, string>): Promise<Run> {
  const command = [...Object.entries(env).map(([variable, value]) => `${variable}=${value}`), 'node', ...args].join(' ')
  console.log(`\n=== ${name}: ${command}\n`)
  const startedAt = performance.now()
  const child = spawn(process.execPath, args, { cwd: root, env: { ...process.env, ...env }, stdio: ['ignore', 'pipe', 'pipe'] })
  let output = ''
  child.stdout.setEncoding('utf8').on('data', (chunk: string) => { output += chunk; process.stdout.write(chunk) })
  child.stderr.setEncoding('utf8').on('data', (chunk: string) => { output += chunk; process.stderr.write(chunk) })
  const [code, signal] = await once(child, 'close') as [number | null, NodeJS.Signals | null]
  writeFileSync(join(logDir, `${name}.log`), output)
  return { command, code, signal, output, seconds: (performance.now() - startedAt) / 1000 }
}

const nodeTest = (...files: string[]): string[] => ['--import', 'tsx', '--test', '--test-reporter=tap', ...files]

interface TestOutcome { name: string, status: 'passed' | 'failed' | 'skipped', details: string }

/** The ok / not ok lines of a TAP stream at any depth, with the YAML block of each failure. */
function outcomes (tap: string): TestOutcome[] {
  const lines = tap.split('\n')
  const found: TestOutcome[] = []
  lines.forEach((line, index) => {
    const match = /^\s*(ok|not ok) \d+ - (.*?)(?: # (SKIP|TODO)\b.*)?$/.exec(line)
    if (!match) return
    const [, verdict, name = '', directive] = match
    let details = ''
    if (verdict === 'not ok') {
      const end = lines.findIndex((candidate, at) => at > index && /^\s*\.\.\.\s*$/.test(candidate))
      details = lines.slice(index + 1, end === -1 ? index + 60 : end).join('\n')
    }
    found.push({ name, status: directive === 'SKIP' ? 'skipped' : verdict === 'ok' ? 'passed' : 'failed', details })
  })
  return found
}

/** The `# ` diagnostics inside tests, without the counts the reporter prints at the end. */
function diagnostics (tap: string): string[] {
  return tap.split('\n')
    .map((line) => /^\s*# (.*)$/.exec(line)?.[1] ?? '')
    .filter((line) => line !== '' && !line.startsWith('Subtest:') && !/^(tests|suites|pass|fail|cancelled|skipped|todo|duration_ms) \d/.test(line))
}

/** The last `lines` lines of a text, each cut to 240 characters. */
const excerpt = (text: string, lines = 40): string => {
  const all = text.trimEnd().split('\n').map((line) => (line.length > 240 ? `${line.slice(0, 240)}…` : line))
  return (all.length > lines ? ['…', ...all.slice(-lines)] : all).join('\n')
}
/** The error of a failed test's YAML block, without its stack. */
const failure = (details: string): string => {
  const lines = details.split('\n')
  const start = lines.findIndex((line) => /^\s*error:/.test(line))
  const end = lines.findIndex((line, at) => at > start && /^\s*(code|stack):|^\s+at /.test(line))
  return excerpt(lines.slice(Math.max(start, 0), end === -1 ? undefined : end).join('\n'), 25)
}
const fence = (text: string): string => `\`\`\`\n${text.replace(/```/g, "'''")}\n\`\`\``

interface CrashFigures {
  engine: string
  clients: number
  oneCore?: boolean
  rows: number
  trials: Array<{ trial: number, killAfter: number, acknowledged: number, sent: number, cut: number, ms: number }>
  acknowledged: number
  sent: number
  cut: number
  ms: number
}

const failures: string[] = []
const skipped: string[] = []
const sections: string[] = []

// 1. Crash durability.
const crash = await run('crash-durability', nodeTest(CRASH_TEST), { CRASH_TRIALS: String(CRASH_TRIALS) })
{
  const figures = diagnostics(crash.output)
    .map((line) => /^crash-figures (\{.*\})$/.exec(line)?.[1])
    .filter((json): json is string => json !== undefined)
    .map((json) => JSON.parse(json) as CrashFigures)
  const tests = outcomes(crash.output)
  // SQLite three times: 64 clients make large batches, synced on the thread pool when the server has cores to spare
  // and on the event loop when it is pinned to one; 4 clients make small ones, synced on the thread pool.
  const runs: Array<{ title: string, engine: string, clients: number, oneCore: boolean }> = [
    { title: 'SQLite', engine: 'sqlite', clients: 64, oneCore: false },
    { title: 'SQLite pinned to one core', engine: 'sqlite', clients: 64, oneCore: true },
    { title: 'SQLite', engine: 'sqlite', clients: 4, oneCore: false },
    { title: 'PostgreSQL', engine: 'postgres', clients: 64, oneCore: false }
  ]
  const rows: string[] = []
  const perTrial: string[] = []
  const problems: string[] = []
  for (const { title: engineTitle, engine, clients, oneCore } of runs) {
    const title = `${engineTitle}, ${clients} clients`
    const outcome = tests.find((test) => test.name.includes(`under ${clients} clients on ${engineTitle} (`))
    const figure = figures.find((candidate) => candidate.engine === engine && candidate.clients === clients && (candidate.oneCore ?? false) === oneCore)
    const status = outcome?.status ?? 'missing'
    if (status === 'failed' || status === 'missing' || (status === 'passed' && figure === undefined)) {
      failures.push(`crash durability on ${title}: ${status === 'passed' ? 'no figures printed' : status}`)
    }
    if (status === 'skipped') skipped.push(`crash durability on ${title}`)
    if (outcome?.status === 'failed') problems.push(`${title}:\n\n${fence(failure(outcome.details))}`)
    if (figure === undefined) {
      rows.push(`| ${title} | ${status} | – | – | – | – | – | ${status === 'failed' ? 1 : 0} | – |`)
      continue
    }
    rows.push(`| ${title} | ${status} | ${figure.trials.length} | ${figure.acknowledged} | ${figure.sent} | ${figure.cut} | ` +
      `${figure.rows} (+${figure.rows - figure.acknowledged}) | ${status === 'failed' ? 1 : 0} | ${(figure.ms / 1000).toFixed(1)} s |`)
    const kills = figure.trials.map((trial) => trial.killAfter)
    perTrial.push(`<details><summary>${title}: ${figure.trials.length} trials, SIGKILL after ${Math.min(...kills)} to ${Math.max(...kills)} acknowledgements</summary>\n\n` +
      '| Trial | SIGKILL after | Acknowledged | Sent | Cut by the kill | Time |\n|---:|---:|---:|---:|---:|---:|\n' +
      figure.trials.map((trial) => `| ${trial.trial} | ${trial.killAfter} | ${trial.acknowledged} | ${trial.sent} | ${trial.cut} | ${trial.ms} ms |`).join('\n') +
      '\n\n</details>')
  }
  if (crash.code !== 0 && !failures.some((failure) => failure.startsWith('crash'))) failures.push(`crash durability: exit ${crash.code ?? crash.signal}`)
  sections.push(`## Crash durability: SIGKILL while clients create animals

Command: \`${crash.command}\` (exit ${crash.code ?? crash.signal}, ${crash.seconds.toFixed(0)} s)

In each trial concurrent clients create animals (each sends its next create before reading the answer to the previous
one, so creates are always in flight): 64 of them, and on SQLite also 64 with the server pinned to one core (where
large batches are synced on the event loop rather than on the thread pool) and 4, whose small batches are synced on the
thread pool; the server is SIGKILLed once a random number (20 to 200) of
creates have been acknowledged with 201, restarted, and every animal acknowledged so far, in this trial and all earlier
ones, must be served by GET /v1/pets/{id} exactly as its 201 body showed it. On SQLite, \`PRAGMA integrity_check\` must
answer ok after every kill and at the end; on both engines the pets table must hold at least as many rows as there were
acknowledgements, with unique ids.

"Acknowledged" counts 201 answers, including those already on their way when the kill was sent; "cut by the kill" counts
creates sent that got no answer (nothing is promised about them); "rows" is the pets table at the end, with in brackets the
creates that committed although their answer was cut. A failure is an acknowledged animal missing or changed, a 201 body
not echoing the request, a repeated id, an answer other than 201 before the kill, or an integrity error: the first one
ends the engine's run.

| Engine | Result | Trials | Creates acknowledged | Creates sent | Cut by the kill | Rows at the end | Failures | Time |
|---|---|---:|---:|---:|---:|---:|---:|---:|
${rows.join('\n')}

${perTrial.join('\n\n')}
${problems.length > 0 ? `\n### Failures\n\n${problems.join('\n\n')}\n` : ''}`)
}

// 2. Fuzz.
if (FUZZ_TESTS.length > 0) {
  const fuzz = await run('fuzz', nodeTest(...FUZZ_TESTS), { FUZZ_RUNS: String(FUZZ_RUNS), FUZZ_PORTAL_RUNS: String(FUZZ_PORTAL_RUNS) })
  const tests = outcomes(fuzz.output)
  const failed = tests.filter((test) => test.status === 'failed')
  if (fuzz.code !== 0) failures.push(`fuzz: exit ${fuzz.code ?? fuzz.signal}`)
  const notes = diagnostics(fuzz.output)
  // Each file prints the requests it sent in all: their sum is the total; runs per property are the fallback.
  const counts = (pattern: RegExp): string[] => notes.map((line) => pattern.exec(line)?.[0]).filter((value): value is string => value !== undefined)
  const sent = counts(/\d+(?= requests sent in all)/).map(Number)
  const requests = sent.length > 0 ? `${sent.reduce((sum, count) => sum + count, 0)} requests sent in all` : counts(/\d[\d,_]*\s+runs\b/i).join(', ')
  const seed = notes.map((line) => /\bseed\b\s*[:=]?\s*(-?\d+)/i.exec(line)?.[1]).find((value) => value !== undefined) ??
    /\bseed\b\s*[:=]?\s*(-?\d+)/i.exec(fuzz.output)?.[1]
  sections.push(`## Fuzz

Command: \`${fuzz.command}\` (exit ${fuzz.code ?? fuzz.signal}, ${fuzz.seconds.toFixed(0)} s)

- Tests: ${tests.filter((test) => test.status === 'passed').length} passed, ${failed.length} failed, ${tests.filter((test) => test.status === 'skipped').length} skipped
- Requests: ${requests !== '' ? requests : `not printed (FUZZ_RUNS=${FUZZ_RUNS})`}
- Seed: ${seed ?? 'not printed'}
${notes.length > 0 ? `\nWhat the fuzz test printed:\n\n${fence(excerpt(notes.join('\n'), 30))}\n` : ''}${failed.map((test) => `\nFailed: ${test.name}\n\n${fence(failure(test.details))}\n`).join('')}`)
} else {
  console.log('\n=== fuzz: skipped, no test/http/fuzz-*.test.ts exists')
  skipped.push('fuzz')
  sections.push('## Fuzz\n\nNot run: no test/http/fuzz-*.test.ts exists.\n')
}

// 3. Overload benchmark: its own section, written by bench/overload.ts's printed summary.
let overload: string
if (existsSync(join(root, OVERLOAD_BENCH))) {
  const bench = await run('overload', ['--import', 'tsx', OVERLOAD_BENCH], {})
  if (bench.code !== 0) failures.push(`overload benchmark: exit ${bench.code ?? bench.signal}`)
  overload = `Command: \`${bench.command}\` (exit ${bench.code ?? bench.signal}, ${bench.seconds.toFixed(0)} s)\n\n${fence(excerpt(bench.output, 80))}`
} else {
  console.log(`\n=== overload: skipped, ${OVERLOAD_BENCH} does not exist`)
  skipped.push('overload benchmark')
  overload = `Not run: ${OVERLOAD_BENCH} does not exist yet. Once it does, \`npm run reliability\` runs it with ` +
    `\`node --import tsx ${OVERLOAD_BENCH}\` and puts its printed summary here.`
}
sections.push(`<!-- overload benchmark: begin (filled by scripts/reliability.ts from bench/overload.ts) -->
## Overload benchmark

${overload}
<!-- overload benchmark: end -->
`)

// 4. The outside attack, replayed: its table, and how many cases differ from what is expected.
const attack = await run('attack', ['--import', 'tsx', ATTACK], {})
const attackSummary = /(\d+) cases, (\d+) differ from what is expected/.exec(attack.output)
if (attack.code !== 0) failures.push(`attack: ${attackSummary === null ? `exit ${attack.code ?? attack.signal}` : `${attackSummary[2]} of ${attackSummary[1]} cases differ`}`)
const attackTable = attack.output.split('\n').filter((line) => line.startsWith('|')).join('\n')
sections.push(`## The outside attack, replayed

Command: \`${attack.command}\` (exit ${attack.code ?? attack.signal}, ${attack.seconds.toFixed(0)} s): ${attackSummary === null ? 'no summary printed' : `${attackSummary[1]} cases, ${attackSummary[2]} differing`}.

${attackTable}
`)

const cpuList = cpus()
const load = loadavg().map((value) => value.toFixed(2)).join(', ')
const summary = `# Reliability results

Written by \`npm run reliability\` (scripts/reliability.ts); run it again to refresh this file. \`npm test\` runs the
same crash test with 1 trial of each kind and the fuzz tests with their default number of runs.

- Date: ${new Date().toISOString()}
- Command: \`npm run reliability\`
- Machine: ${cpuList.length} × ${cpuList[0]?.model.trim() ?? 'unknown CPU'}, ${(totalmem() / 2 ** 30).toFixed(1)} GiB, ${osType()} ${release()}, load average at the end ${load}
- Node: ${process.version}
- Result: ${failures.length === 0 ? 'no failure' : `FAILED: ${failures.join('; ')}`}${skipped.length > 0 ? `; skipped: ${skipped.join(', ')}` : ''}

${sections.join('\n')}`
mkdirSync(join(root, 'bench', 'results'), { recursive: true })
writeFileSync(RESULTS, summary)
console.log(`\nWrote ${RESULTS}; full output of each part in ${logDir}`)
if (failures.length > 0) {
  console.error(`reliability: FAILED: ${failures.join('; ')}`)
  process.exitCode = 1
}
