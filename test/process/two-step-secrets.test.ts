import { execFile } from 'node:child_process'
import { promisify } from 'node:util'
import { test } from 'node:test'
import assert from 'node:assert/strict'
import { Secret, TOTP } from 'otpauth'
import { Browser, signUpAndLogIn } from '../helpers/portal-browser.js'
import { createTestSchema, postgresAvailable } from '../helpers/postgres.js'
import { launchServer } from '../helpers/server-process.js'

const run = promisify(execFile)
const PASSWORD = 'correct horse battery staple'

const codeAt = (secret: string, step: number): string =>
  new TOTP({ secret: Secret.fromBase32(secret), digits: 6, period: 30, algorithm: 'SHA1' }).generate({ timestamp: step * 30_000 + 1000 })

test('no TOTP secret, code or recovery code appears in a PostgreSQL dump or in the logs, even at trace level', { timeout: 90_000 }, async (t) => {
  if (!await postgresAvailable()) {
    t.skip('PostgreSQL is not reachable')
    return
  }
  const databaseUrl = await createTestSchema(t)
  const server = launchServer(t, { PATH: process.env.PATH ?? '', DATABASE_URL: databaseUrl, LOG_LEVEL: 'trace', TRUST_PROXY: 'loopback' })
  const baseUrl = await server.listening
  const browser = new Browser(baseUrl, '192.0.2.44')
  assert.equal((await signUpAndLogIn(browser, 'totp@example.com', PASSWORD)).status, 303)
  assert.equal((await browser.submit('/portal/two-step', '/portal/two-step/setup', {})).status, 303)
  const setup = await browser.get('/portal/two-step/setup')
  const secret = (/<code id="totp-secret">([A-Z2-7 ]+)<\/code>/.exec(setup.body)?.[1] ?? '').replaceAll(' ', '')
  assert.match(secret, /^[A-Z2-7]{32}$/)
  const step = Math.floor(Date.now() / 30_000)
  const first = codeAt(secret, step)
  const confirmed = await browser.submit('/portal/two-step/setup', '/portal/two-step/confirm', { code: first })
  assert.equal(confirmed.status, 200, confirmed.body)
  const recoveryCodes = [...confirmed.body.matchAll(/<li><code>([a-z2-7]{5}-[a-z2-7]{5})<\/code><\/li>/g)].map((match) => match[1] ?? '')
  assert.equal(recoveryCodes.length, 10)

  const again = new Browser(baseUrl, '192.0.2.45')
  assert.equal((await again.submit('/portal/login', '/portal/login', { email: 'totp@example.com', password: PASSWORD })).headers.get('location'), '/portal/login/code')
  const second = codeAt(secret, step + 1)
  assert.equal((await again.submit('/portal/login/code', '/portal/login/code', { code: second })).headers.get('location'), '/portal/keys')
  const third = new Browser(baseUrl, '192.0.2.46')
  await third.submit('/portal/login', '/portal/login', { email: 'totp@example.com', password: PASSWORD })
  assert.equal((await third.submit('/portal/login/code', '/portal/login/code', { code: recoveryCodes[0] ?? '' })).headers.get('location'), '/portal/keys')
  server.child.kill('SIGTERM')
  assert.equal((await server.exited).code, 0)

  const url = new URL(databaseUrl)
  const schema = (url.searchParams.get('options') ?? '').replace('-c search_path=', '')
  url.search = ''
  const { stdout: dump } = await run('pg_dump', ['--schema', schema, '--data-only', url.toString()], { maxBuffer: 64 * 1024 * 1024 })
  assert.match(dump, /totp@example\.com/, 'the dump holds the data (the search works)')
  assert.match(dump, /two_step/, 'the dump holds the two-step tables')
  const logs = server.lines.join('\n') + server.stderr()
  assert.ok(server.lines.length > 0)
  for (const [what, text] of [['the TOTP secret', secret], ['a recovery code', recoveryCodes[0] ?? ''], ['another recovery code', recoveryCodes[9] ?? '']] as const) {
    assert.equal(dump.includes(text) || dump.includes(text.replace('-', '')), false, `${what} is not in the database dump`)
    assert.equal(logs.includes(text) || logs.includes(text.replace('-', '')), false, `${what} is not in the logs`)
  }
  for (const code of [first, second]) assert.equal(new RegExp(`code=${code}\\b|"${code}"`).test(logs), false, 'a typed code is not in the logs')
})
