/**
 * npm test and npm run test:fast: the test files through node:test's run(), in one pool of
 * processes, reported by the spec reporter (each failure in full at the end, then the counts).
 *
 *   scripts/test.ts [--test-timeout=MS]         the type check and the linter side by side, then every
 *                                               test file on SQLite and the HTTP suites again on PostgreSQL
 *   scripts/test.ts --fast [--test-timeout=MS]  the unit tests (src/) and the HTTP suites, on SQLite only
 *
 * TEST_CONCURRENCY sets the pool's size (default 2: the files spawn servers and browsers of their own).
 * node:test gives every file the runner's environment, so the PostgreSQL run of an HTTP suite is a
 * generated file that sets TEST_ENGINE=postgres and then imports the suite.
 */
import { spawn } from 'node:child_process'
import { once } from 'node:events'
import { mkdirSync, mkdtempSync, readdirSync, rmSync, writeFileSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { dirname, join, resolve } from 'node:path'
import { pathToFileURL } from 'node:url'
import { run } from 'node:test'
import { spec as SpecReporter } from 'node:test/reporters'
import { postgresAvailable } from '../test/helpers/postgres.js'

const root = join(import.meta.dirname, '..')
const fast = process.argv.includes('--fast')
const timeout = Number(process.argv.find((arg) => arg.startsWith('--test-timeout='))?.split('=')[1] ?? Infinity)
const concurrency = Number(process.env.TEST_CONCURRENCY ?? 2)

/** The *.test.ts files under a folder of the project, relative to the root, sorted. */
function testFiles (folder: string): string[] {
  return readdirSync(join(root, folder), { recursive: true, encoding: 'utf8' })
    .filter((file) => file.endsWith('.test.ts'))
    .map((file) => join(folder, file))
    .sort()
}

/** Runs a command in the project root; resolves with its exit code. */
async function command (name: string, args: string[]): Promise<number> {
  const child = spawn(name, args, { cwd: root, stdio: 'inherit' })
  const [code] = await once(child, 'exit') as [number | null]
  return code ?? 1
}

/** The HTTP suites as files that run them on PostgreSQL, in a temporary folder; undefined when PostgreSQL is skipped. */
async function onPostgres (suites: string[]): Promise<string[] | undefined> {
  // Throws under CI=true when PostgreSQL does not answer; otherwise says loudly that the run is skipped.
  if (!await postgresAvailable()) return undefined
  const dir = mkdtempSync(join(tmpdir(), 'animal-store-tests-'))
  process.on('exit', () => rmSync(dir, { recursive: true, force: true }))
  // ES modules, as in the project: the generated files wait for the suite's import at the top level.
  writeFileSync(join(dir, 'package.json'), '{ "type": "module" }\n')
  return suites.map((suite) => {
    const file = join(dir, 'on-postgres', suite)
    mkdirSync(dirname(file), { recursive: true })
    writeFileSync(file, `process.env.TEST_ENGINE = 'postgres'\nawait import(${JSON.stringify(pathToFileURL(join(root, suite)).href)})\n`)
    return file
  })
}

const unit = testFiles('src')
const http = testFiles('test/http')
let files: string[]
if (fast) {
  files = [...http, ...unit]
} else {
  // Type check and lint first, side by side: a type error fails the run before the tests spend minutes.
  const checks = await Promise.all([command('npx', ['tsc', '--noEmit', '-p', '.']), command('npx', ['eslint', '.'])])
  if (checks.some((code) => code !== 0)) process.exit(1)
  // The files that spawn servers, clusters and browsers take longest: they start first, so none is left running alone at the end.
  const others = testFiles('test').filter((file) => !file.startsWith(join('test', 'http')))
  files = [...others, ...http, ...(await onPostgres(http) ?? []), ...unit]
}

console.log(`${files.length} test files${fast ? ' (unit and HTTP, on SQLite)' : ''}, ${concurrency} at a time`)
const stream = run({ files: files.map((file) => resolve(root, file)), concurrency, timeout })
stream.on('test:fail', () => { process.exitCode = 1 })
stream.compose(new SpecReporter()).pipe(process.stdout)
