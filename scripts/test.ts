/**
 * npm test and npm run test:fast: the test files through node:test's run(), in one pool of
 * processes, reported by the spec reporter (each failure in full at the end, then the counts and
 * the slowest files).
 *
 *   scripts/test.ts [--test-timeout=MS]         every test file on SQLite and the HTTP suites again on
 *                                               PostgreSQL, with the type check and the linter beside them
 *   scripts/test.ts --fast [--test-timeout=MS]  the unit tests (src/) and the HTTP suites, on SQLite only
 *
 * TEST_CONCURRENCY sets the pool's size (default 4: most files spend much of their time waiting on
 * spawned processes, syncs and sockets rather than on a core, so two cores keep four files going).
 * npm test bundles dist/ without the build's type check: the type check here covers the whole project.
 * node:test gives every file the runner's environment, so the PostgreSQL run of an HTTP suite is a
 * generated file that sets TEST_ENGINE=postgres and then imports the suite.
 */
import { spawn } from 'node:child_process'
import { once } from 'node:events'
import { mkdirSync, mkdtempSync, readdirSync, rmSync, writeFileSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { dirname, join, relative, resolve } from 'node:path'
import { pathToFileURL } from 'node:url'
import { run } from 'node:test'
import { spec as SpecReporter } from 'node:test/reporters'
import { postgresAvailable } from '../test/helpers/postgres.js'

const root = join(import.meta.dirname, '..')
const fast = process.argv.includes('--fast')
const timeout = Number(process.argv.find((arg) => arg.startsWith('--test-timeout='))?.split('=')[1] ?? Infinity)
const concurrency = Number(process.env.TEST_CONCURRENCY ?? 4)
const SLOWEST_SHOWN = 12

/**
 * The files that take longest (as the list printed at the end of a run shows), started first so that
 * none of them is left running alone at the end. Every other file keeps its place in the order below.
 */
const SLOWEST_FIRST = [
  'test/http/portal.test.ts',
  'test/cli/key-lifecycle.test.ts',
  'test/replication/replica-reads.test.ts',
  'test/http/portal-throttling.test.ts',
  'test/http/portal-pages.test.ts',
  'test/replication/failover.test.ts',
  'test/http/tracing.test.ts',
  'test/e2e/portal.e2e.test.ts',
  'test/process/log-destination.test.ts',
  'test/http/portal-flood.test.ts',
  'test/process/crash-durability.test.ts'
]

/** The *.test.ts files under a folder of the project, relative to the root, sorted. */
function testFiles (folder: string): string[] {
  return readdirSync(join(root, folder), { recursive: true, encoding: 'utf8' })
    .filter((file) => file.endsWith('.test.ts'))
    .map((file) => join(folder, file))
    .sort()
}

/** Runs a check in the project root, its output kept; resolves with what it printed when it fails, '' when it passes. */
async function check (name: string, args: string[]): Promise<string> {
  const child = spawn(name, args, { cwd: root, stdio: ['ignore', 'pipe', 'pipe'] })
  let output = ''
  child.stdout.on('data', (chunk: Buffer) => { output += chunk.toString() })
  child.stderr.on('data', (chunk: Buffer) => { output += chunk.toString() })
  const [code] = await once(child, 'close') as [number | null]
  return code === 0 ? '' : `${[name, ...args].join(' ')} failed:\n${output}`
}

/** The suite each generated PostgreSQL file runs, for the order the files start in. */
const suiteOf = new Map<string, string>()

/** A temporary folder for generated test files, removed at exit; ES modules, as in the project. */
let generatedDir: string | undefined
function generated (): string {
  if (generatedDir === undefined) {
    const dir = generatedDir = mkdtempSync(join(tmpdir(), 'animal-store-tests-'))
    process.on('exit', () => rmSync(dir, { recursive: true, force: true }))
    // The generated files wait for the imports at the top level.
    writeFileSync(join(dir, 'package.json'), '{ "type": "module" }\n')
  }
  return generatedDir
}

const importOf = (file: string): string => `await import(${JSON.stringify(pathToFileURL(join(root, file)).href)})\n`

/**
 * Suites that keep a process of their own besides the slowest: tracing's registers the process's tracer and context
 * manager, and the portal suites that hash at the default cost time password checks, fill their queue or flood a
 * server with them, which another suite's work in the same process would skew. The other portal suites hash at the
 * tests' low cost and share processes with the light suites.
 */
const ALONE = /tracing|portal\.test|portal-throttling|portal-flood/

/**
 * The HTTP suites as test processes on one engine. Loading the app's modules through tsx costs a process
 * about 4 s of CPU, more than most suites' own tests take: the light suites run in `concurrency` processes
 * between them, one suite after another in each; the slow ones (SLOWEST_FIRST) and those ALONE names have one each.
 * On PostgreSQL a process is a generated file that sets TEST_ENGINE first; none when PostgreSQL is skipped.
 */
async function httpProcesses (suites: string[], engine: 'sqlite' | 'postgres'): Promise<string[]> {
  // Throws under CI=true when PostgreSQL does not answer; otherwise says loudly that the run is skipped.
  if (engine === 'postgres' && !await postgresAvailable()) return []
  const prelude = engine === 'postgres' ? "process.env.TEST_ENGINE = 'postgres'\n" : ''
  const alone = suites.filter((suite) => SLOWEST_FIRST.includes(suite) || ALONE.test(suite))
  const light = suites.filter((suite) => !alone.includes(suite))
  const processes = alone.map((suite) => {
    if (engine === 'sqlite') return suite
    const file = join(generated(), 'on-postgres', suite)
    mkdirSync(dirname(file), { recursive: true })
    writeFileSync(file, prelude + importOf(suite))
    suiteOf.set(file, suite)
    return file
  })
  for (let group = 0; group < Math.min(concurrency, light.length); group++) {
    const file = join(generated(), `http-suites-${engine}-${group + 1}.mjs`)
    writeFileSync(file, prelude + light.filter((_, at) => at % concurrency === group).map(importOf).join(''))
    processes.push(file)
  }
  return processes
}

/**
 * The unit tests as one file that imports them all: each takes milliseconds, and a process of its
 * own would cost more than its tests. They touch no shared state; a failure still names its file.
 */
function inOneProcess (units: string[]): string[] {
  if (units.length === 0) return []
  const file = join(generated(), 'unit-tests.mjs')
  writeFileSync(file, units.map(importOf).join(''))
  return [file]
}

/** The files in the order they start: the slowest first, then the rest in the order given. */
function slowestFirst (files: string[]): string[] {
  const rank = (file: string): number => {
    const at = SLOWEST_FIRST.indexOf(suiteOf.get(file) ?? relative(root, file))
    return at === -1 ? SLOWEST_FIRST.length : at
  }
  return files.map((file, at) => ({ file, at })).sort((a, b) => rank(a.file) - rank(b.file) || a.at - b.at).map(({ file }) => file)
}

const unit = inOneProcess(testFiles('src'))
const http = testFiles('test/http')
let files: string[]
// The type check and the linter run beside the tests rather than before them: the test files spend much of their
// time waiting on processes, syncs and sockets, and the checks fill those gaps. Their findings are printed at the end.
let checks: Promise<string[]> = Promise.resolve([])
if (fast) {
  files = [...await httpProcesses(http, 'sqlite'), ...unit]
} else {
  checks = Promise.all([check('npx', ['tsc', '--noEmit', '-p', '.']), check('npx', ['eslint', '.'])])
  const others = testFiles('test').filter((file) => !file.startsWith(join('test', 'http')))
  files = [...others, ...await httpProcesses(http, 'sqlite'), ...await httpProcesses(http, 'postgres'), ...unit]
}
files = slowestFirst(files.map((file) => resolve(root, file)))

console.log(`${files.length} test processes${fast ? ' (unit and HTTP, on SQLite)' : ''}, ${concurrency} at a time`)
const stream = run({ files, concurrency, timeout })
stream.on('test:fail', () => { process.exitCode = 1 })
// Where the time goes: the durations of the top-level tests of each file that defines tests, added up (its start-up
// not included; an HTTP suite's runs on both engines together, since node:test names the file that defines a test).
const seconds = new Map<string, number>()
const count = (data: { nesting: number, file?: string, details: { duration_ms: number } }): void => {
  if (data.nesting === 0 && data.file !== undefined) seconds.set(data.file, (seconds.get(data.file) ?? 0) + data.details.duration_ms / 1000)
}
stream.on('test:pass', count)
stream.on('test:fail', count)
stream.compose(new SpecReporter()).on('end', () => {
  const slowest = [...seconds].sort(([, a], [, b]) => b - a).slice(0, SLOWEST_SHOWN)
  console.log(`\nslowest files (seconds in their tests, on every engine they ran on):\n${slowest.map(([file, s]) => `  ${s.toFixed(1).padStart(6)}  ${relative(root, file)}`).join('\n')}`)
  void checks.then((failures) => {
    for (const failure of failures.filter((text) => text !== '')) {
      console.log(`\n${failure}`)
      process.exitCode = 1
    }
  })
}).pipe(process.stdout)
