import { execFile } from 'node:child_process'
import { copyFileSync, mkdirSync, writeFileSync } from 'node:fs'
import { join } from 'node:path'
import { describe, test } from 'node:test'
import assert from 'node:assert/strict'
import { TEST_ENGINE } from '../helpers/test-engine.js'

const ROOT = join(import.meta.dirname, '..', '..')
const BIN = join(ROOT, 'node_modules', '.bin')
/** Both linters run offline: no telemetry, no update checks, no usage analytics. */
const OFFLINE = { ...process.env, REDOCLY_TELEMETRY: 'off', REDOCLY_SUPPRESS_UPDATE_NOTICE: 'true', SCARF_ANALYTICS: 'false', DO_NOT_TRACK: '1' }

/** Runs a linter to completion; a linter that finds errors exits non-zero, so the exit code is returned, not thrown. */
async function lint (command: string, args: string[], cwd: string): Promise<{ code: number, stdout: string, stderr: string }> {
  return await new Promise((resolve) => {
    execFile(join(BIN, command), args, { cwd, env: OFFLINE, maxBuffer: 16 * 1024 * 1024, timeout: 60_000 }, (error, stdout, stderr) => {
      resolve({ code: typeof error?.code === 'number' ? error.code : error === null ? 0 : -1, stdout, stderr })
    })
  })
}

interface RedoclyReport { totals: { errors: number, warnings: number, ignored: number }, problems: Array<{ ruleId: string, message: string, location?: Array<{ pointer?: string }> }> }
interface SpectralResult { code: string, message: string, severity: number, path: string[] }

// The document does not depend on the engine, so the PostgreSQL run of the HTTP suites skips this file.
describe('independent OpenAPI linters, against the document the server serves', { skip: TEST_ENGINE === 'postgres' }, () => {
  test("Redocly's recommended rules find no error and no warning; Spectral's OpenAPI and OWASP rules no error", { timeout: 120_000 }, async (t) => {
    // Loaded here, not at the top: the PostgreSQL run skips this file, and loading the application would be all it did.
    const [{ startServer }, { tempDir }] = await Promise.all([import('../helpers/start-server.js'), import('../helpers/build-app.js')])
    const server = await startServer(t)
    const response = await fetch(`${server.baseUrl}/v1/openapi.json`)
    assert.equal(response.status, 200)
    // Linted as client/openapi.json, the name the committed exceptions in .redocly.lint-ignore.yaml give it.
    const dir = tempDir(t)
    mkdirSync(join(dir, 'client'))
    writeFileSync(join(dir, 'client', 'openapi.json'), await response.text())
    copyFileSync(join(ROOT, '.redocly.lint-ignore.yaml'), join(dir, '.redocly.lint-ignore.yaml'))

    const [redocly, spectral] = await Promise.all([
      lint('redocly', ['lint', 'client/openapi.json', '--format=json'], dir),
      lint('spectral', ['lint', 'client/openapi.json', '--ruleset', join(ROOT, '.spectral.yaml'), '--format=json', '--quiet'], dir)
    ])

    const report = JSON.parse(redocly.stdout) as RedoclyReport
    const problems = report.problems.map((problem) => `${problem.ruleId} at ${problem.location?.[0]?.pointer ?? '?'}: ${problem.message}`)
    assert.deepEqual(problems, [], 'Redocly (recommended)')
    assert.deepEqual({ errors: report.totals.errors, warnings: report.totals.warnings }, { errors: 0, warnings: 0 })
    assert.equal(redocly.code, 0, redocly.stderr)

    const results = JSON.parse(spectral.stdout.trim() === '' ? '[]' : spectral.stdout) as SpectralResult[]
    const errors = results.filter((result) => result.severity === 0).map((result) => `${result.code} at ${result.path.join('/')}: ${result.message}`)
    assert.deepEqual(errors, [], 'Spectral (spectral:oas and the OWASP ruleset, with the exceptions of .spectral.yaml)')
    assert.equal(spectral.code, 0, spectral.stderr)
  })
})
