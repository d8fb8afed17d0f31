import { describe, test, type TestContext } from 'node:test'
import assert from 'node:assert/strict'
import { spawn } from 'node:child_process'
import { stripVTControlCharacters } from 'node:util'
import { TEST_DEFAULTS, tempDir } from '../helpers/build-app.js'
import { eventually } from '../helpers/eventually.js'
import { dbFile, seedApiKey } from '../helpers/server-process.js'
import { CLI_PATH } from '../helpers/spawn-cli.js'

/** The start-up line as the README shows it, after the time and the level. */
const STARTUP = /^\[\d\d:\d\d:\d\d\.\d{3}\] INFO: Animal Store listening on (http:\/\/127\.0\.0\.1:\d+): API \/v1, reference \/docs, portal \/portal$/

/**
 * `serve` with its standard output on a pipe, or on a pseudo-terminal (`script`), as a person
 * running `npm start` has; its whole process group is killed after the test.
 */
function startServer (t: TestContext, env: Record<string, string>, { terminal }: { terminal: boolean }): { output: () => string[] } {
  const serve = [process.execPath, CLI_PATH, 'serve']
  const [file = '', ...args] = terminal ? ['script', '-qfec', serve.join(' '), '/dev/null'] : serve
  const child = spawn(file, args, {
    env: { ...process.env, HOST: '127.0.0.1', PORT: '0', ...TEST_DEFAULTS, ...env },
    stdio: ['ignore', 'pipe', 'pipe'],
    detached: true
  })
  t.after(() => {
    try {
      process.kill(-(child.pid ?? 0), 'SIGKILL')
    } catch {
      // Already gone.
    }
  })
  let text = ''
  child.stdout.setEncoding('utf8').on('data', (chunk: string) => { text += chunk })
  child.stderr.setEncoding('utf8').on('data', (chunk: string) => { text += chunk })
  return { output: () => stripVTControlCharacters(text).split(/\r?\n/).filter((line) => line !== '') }
}

async function started (t: TestContext, env: Record<string, string>, options: { terminal: boolean }): Promise<{ output: () => string[], key: string }> {
  const dir = tempDir(t)
  const key = await seedApiKey(dbFile(dir))
  const server = startServer(t, { DATABASE_URL: `sqlite:${dbFile(dir)}`, ...env }, options)
  return { ...server, key }
}

describe('log format', () => {
  test('on a terminal, lines are pretty: the start-up line reads as the README shows it, and so does the access line', { timeout: 30_000 }, async (t) => {
    // No METRICS_TOKEN, as on a first run: the notice that /metrics is off is no line of the start-up.
    const { output, key } = await started(t, { METRICS_TOKEN: '' }, { terminal: true })
    const url = await eventually(() => {
      const line = output().find((each) => STARTUP.test(each))
      assert.ok(line !== undefined, output().join('\n'))
      return (STARTUP.exec(line) as RegExpExecArray)[1] as string
    }, { timeout: 20_000 })
    assert.deepEqual(output().filter((line) => !line.includes('applied database migrations') && !line.includes('INFO: mail to ')).length, 1, `the start-up is one line: ${output().join('\n')}`)
    assert.ok(!output().some((line) => line.includes('/metrics')), 'the metrics notice is at debug level')

    const answer = await fetch(`${url}/v1/pets?limit=1`, { headers: { authorization: `Bearer ${key}` } })
    assert.equal(answer.status, 200)
    const access = await eventually(() => {
      const line = output().find((each) => each.includes('request completed'))
      assert.ok(line !== undefined, output().join('\n'))
      return line
    }, { timeout: 10_000 })
    assert.match(access, /^\[\d\d:\d\d:\d\d\.\d{3}\] INFO: request completed \{.*"url":"\/v1\/pets\?limit=1","statusCode":200,"ms":[\d.]+\}$/)
    assert.ok(!output().some((line) => line.startsWith('{')), 'no JSON line on a terminal')
  })

  test('LOG_FORMAT=pretty prints pretty lines on a pipe too', { timeout: 30_000 }, async (t) => {
    const { output } = await started(t, { LOG_FORMAT: 'pretty' }, { terminal: false })
    await eventually(() => assert.ok(output().some((line) => STARTUP.test(line)), output().join('\n')), { timeout: 20_000 })
  })

  test('on a pipe lines are JSON, and LOG_FORMAT=json keeps them JSON on a terminal', { timeout: 30_000 }, async (t) => {
    for (const [env, terminal] of [[{}, false], [{ LOG_FORMAT: 'json' }, true]] as const) {
      const { output } = await started(t, env, { terminal })
      const line = await eventually(() => {
        const found = output().find((each) => each.includes('Animal Store listening on'))
        assert.ok(found !== undefined, output().join('\n'))
        return found
      }, { timeout: 20_000 })
      const entry = JSON.parse(line) as { level: number, msg: string }
      assert.equal(entry.level, 30)
      assert.match(entry.msg, /^Animal Store listening on http:\/\/127\.0\.0\.1:\d+: API \/v1, reference \/docs, portal \/portal$/)
    }
  })
})
