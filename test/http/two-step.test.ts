import { describe, test } from 'node:test'
import assert from 'node:assert/strict'
import { existsSync, readFileSync } from 'node:fs'
import type { FastifyInstance, LightMyRequestResponse } from 'fastify'
import { Secret, TOTP } from 'otpauth'
import { LOGIN_THROTTLE } from '../../src/core/login-throttle.js'
import type { Store } from '../../src/storage/store.js'
import { suiteTestApp, TEST_ENGINE } from '../helpers/build-app.js'
import { csrfTokenOf, messageOf, PortalClient, TEST_PASSWORD } from '../helpers/portal-client.js'
import { runCli } from '../helpers/spawn-cli.js'

const PASSWORD = TEST_PASSWORD
const CSP = "default-src 'self'; script-src 'self'; style-src 'self'; frame-ancestors 'none'; form-action 'self'; base-uri 'none'"
const PERIOD_MS = 30_000

const stepNow = (): number => Math.floor(Date.now() / PERIOD_MS)

/** The code an authenticator app holding the secret shows for the time step. */
function codeFor (secret: string, step: number): string {
  return new TOTP({ secret: Secret.fromBase32(secret), digits: 6, period: 30, algorithm: 'SHA1' }).generate({ timestamp: step * PERIOD_MS + 1000 })
}

function assertPageSafe (response: LightMyRequestResponse, context: string): void {
  assert.equal(response.headers['content-security-policy'], CSP, context)
  assert.equal(response.headers['cache-control'], 'no-store', context)
  const tags = (response.body.match(/<[a-z][^>]*>/gi) ?? []).map((tag) => tag.replace(/="[^"]*"/g, '=""'))
  assert.deepEqual(tags.filter((tag) => /^<style\b|\sstyle=|\son[a-z]+=|^<script\b(?![^>]*\ssrc="")/i.test(tag)), [], `inline code in ${context}`)
}

/** The secret as the setup page shows it (grouped by four). */
function secretOf (body: string): string {
  const match = /<code id="totp-secret">([A-Z2-7 ]+)<\/code>/.exec(body)
  assert.ok(match?.[1], body)
  return match[1].replaceAll(' ', '')
}

function recoveryCodesOf (body: string): string[] {
  const list = /<ul class="recovery-codes" id="recovery-codes">(.*?)<\/ul>/s.exec(body)?.[1] ?? ''
  return [...list.matchAll(/<code>([a-z2-7]{5}-[a-z2-7]{5})<\/code>/g)].map((match) => match[1] ?? '')
}

/**
 * Starts from a signed-up account (signedUpAs: sign-up is tested in portal.test.ts), opens the setup
 * and confirms it with the code of the step before the current one, so that the current and the next
 * step are left for the test; returns the secret, the recovery codes and the step confirmed.
 */
async function turnOn (browser: PortalClient, store: Store, email: string): Promise<{ secret: string, recoveryCodes: string[], confirmed: number }> {
  await browser.signedUpAs(store, email)
  const started = await browser.submit('/portal/two-step', '/portal/two-step/setup', {})
  assert.equal(started.statusCode, 303, started.body)
  assert.equal(started.headers.location, '/portal/two-step/setup')
  const setup = await browser.get('/portal/two-step/setup')
  assert.equal(setup.statusCode, 200, setup.body)
  assertPageSafe(setup, 'the setup page')
  assert.match(setup.body, /<figure class="qr-code"[^>]*><svg xmlns="http:\/\/www\.w3\.org\/2000\/svg"[^>]*>.*<\/svg><\/figure>/s)
  const secret = secretOf(setup.body)
  const wrong = await browser.post('/portal/two-step/confirm', { _csrf: csrfTokenOf(setup.body), code: codeFor(secret, stepNow() + 5) })
  assert.equal(wrong.statusCode, 400, wrong.body)
  assert.equal(secretOf(wrong.body), secret, 'a wrong first code keeps the same secret')
  let step: number
  let confirmed: LightMyRequestResponse
  do {
    // The previous step's code stops being valid when a step ends: sent again if one ended meanwhile.
    step = stepNow() - 1
    confirmed = await browser.post('/portal/two-step/confirm', { _csrf: csrfTokenOf(setup.body), code: codeFor(secret, step) })
  } while (confirmed.statusCode === 400 && stepNow() !== step + 1)
  assert.equal(confirmed.statusCode, 200, confirmed.body)
  assertPageSafe(confirmed, 'the recovery codes page')
  const recoveryCodes = recoveryCodesOf(confirmed.body)
  assert.equal(recoveryCodes.length, 10)
  assert.equal(new Set(recoveryCodes).size, 10)
  return { secret, recoveryCodes, confirmed: step }
}

async function logOut (browser: PortalClient): Promise<void> {
  const out = await browser.submit('/portal/keys', '/portal/logout', {})
  assert.equal(out.statusCode, 303, out.body)
}

/** Password first: the answer sends to the code page, and no session exists yet. */
async function passwordStep (browser: PortalClient, email: string): Promise<void> {
  const device = browser.cookies.get('portal_device')
  const password = await browser.logIn(email, PASSWORD)
  assert.equal(password.statusCode, 303, password.body)
  assert.equal(password.headers.location, '/portal/login/code')
  assert.equal(browser.cookies.has('portal_session'), false, 'no session before the code')
  assert.equal(browser.cookies.get('portal_device'), device, 'no new device cookie before the code')
  const keys = await browser.get('/portal/keys')
  assert.equal(keys.statusCode, 303, 'the keys page is not open with the password alone')
}

async function codeStep (browser: PortalClient, code: string): Promise<LightMyRequestResponse> {
  return await browser.submit('/portal/login/code', '/portal/login/code', { code })
}

async function assertLoggedIn (browser: PortalClient, response: LightMyRequestResponse): Promise<void> {
  assert.equal(response.statusCode, 303, response.body)
  assert.equal(response.headers.location, '/portal/keys')
  assert.equal((await browser.get('/portal/keys')).statusCode, 200)
}

async function eventsOf (store: Store, email: string): Promise<Array<{ event: string, detail: string | null }>> {
  const account = await store.accounts.findByEmail(email)
  return (await store.audit.page(account?.id ?? 0, { limit: 100 })).map(({ event, detail }) => ({ event, detail }))
}

/** Everything the database holds about two-step verification, as text. */
/** The kinds of the two-step messages written to the outbox for the recipient, newest first. */
async function mailKindsTo (store: Store, recipient: string): Promise<string[]> {
  return (await store.mailOutbox.list({ pendingOnly: false, limit: 100 }))
    .filter((mail) => mail.recipient === recipient && mail.kind.startsWith('two_step'))
    .map((mail) => mail.kind)
}

async function storedText (store: Store, dbPath: string): Promise<string> {
  if (TEST_ENGINE === 'sqlite') return [dbPath, `${dbPath}-wal`].filter((path) => existsSync(path)).map((path) => readFileSync(path).toString('latin1')).join('')
  const account = await store.accounts.findByEmail('dana@example.com')
  const row = await store.twoStep.find(account?.id ?? 0)
  return JSON.stringify(row) + (await store.twoStep.unusedRecoveryCodes(account?.id ?? 0)).join(' ')
}

/** One app for the file: each test keeps to accounts of its own. */
const testApp = suiteTestApp()

describe(`two-step verification (${TEST_ENGINE})`, () => {
  test('on with a first code; log-in then needs a code; a code is never accepted twice, a recovery code once; off with a current code', { timeout: 90_000 }, async () => {
    const { app, store, dbPath } = testApp()
    const browser = new PortalClient(app)
    const { secret, recoveryCodes, confirmed } = await turnOn(browser, store, 'dana@example.com')
    assert.deepEqual((await eventsOf(store, 'dana@example.com'))[0], { event: 'two_step_enabled', detail: 'TOTP, with 10 recovery codes' })
    assert.deepEqual(await mailKindsTo(store, 'dana@example.com'), ['two_step_enabled'], 'the owner is told, through the outbox')
    const stored = await storedText(store, dbPath)
    assert.equal(stored.includes(secret), false, 'the secret is stored sealed')
    for (const code of recoveryCodes) assert.equal(stored.includes(code.replace('-', '')), false, 'recovery codes are stored as digests')
    assert.match((await browser.get('/portal/two-step')).body, /is <strong>on<\/strong>.*10 unused recovery codes/s)
    await logOut(browser)

    const other = new PortalClient(app)
    await passwordStep(other, 'dana@example.com')
    const reused = await codeStep(other, codeFor(secret, confirmed))
    assert.equal(reused.statusCode, 401, 'the code that confirmed the setup is refused')
    assert.match(messageOf(reused.body), /not correct, or it has been used already/)
    const window = [-1, 0, 1, 2].map((delta) => codeFor(secret, stepNow() + delta))
    assert.equal((await codeStep(other, ['000000', '111111', '222222'].find((code) => !window.includes(code)) ?? '')).statusCode, 401)
    // The current step: always after the one confirmed, and within the window.
    const step = stepNow()
    const withCode = await codeStep(other, codeFor(secret, step))
    await assertLoggedIn(other, withCode)
    assert.ok(other.cookies.has('portal_device'), 'the device cookie comes with the session')

    const third = new PortalClient(app)
    await passwordStep(third, 'dana@example.com')
    assert.equal((await codeStep(third, codeFor(secret, step))).statusCode, 401, 'a code accepted once is refused in another browser')
    const [recovery = ''] = recoveryCodes
    await assertLoggedIn(third, await codeStep(third, ` ${recovery.toUpperCase()} `))
    await logOut(third)
    await passwordStep(third, 'dana@example.com')
    assert.equal((await codeStep(third, recovery)).statusCode, 401, 'a recovery code works once')
    assert.match((await third.get('/portal/login/code')).body, /Two-step verification/)

    const refused = await other.submit('/portal/two-step', '/portal/two-step/disable', { code: codeFor(secret, step) })
    assert.equal(refused.statusCode, 400, 'turning off needs a code not used before')
    assert.match(refused.body, /is <strong>on<\/strong>.*9 unused recovery codes/s)
    // The next step: after the one used to log in, and within the window however time went on.
    const off = await other.submit('/portal/two-step', '/portal/two-step/disable', { code: codeFor(secret, stepNow() + 1) })
    assert.equal(off.statusCode, 303, off.body)
    assert.equal(off.headers.location, '/portal/two-step?done=off')
    assert.match((await other.get('/portal/two-step?done=off')).body, /is <strong>off<\/strong>/)
    const events = await eventsOf(store, 'dana@example.com')
    assert.deepEqual(events[0], { event: 'two_step_disabled', detail: 'confirmed with a code' })
    assert.deepEqual(await mailKindsTo(store, 'dana@example.com'), ['two_step_disabled', 'two_step_enabled'])
    assert.ok(events.some((event) => event.event === 'login_succeeded' && event.detail === 'with a recovery code (9 left)'))
    assert.ok(events.some((event) => event.event === 'login_failed' && event.detail === 'wrong two-step verification code'))
    assert.equal(JSON.stringify(events).includes(secret), false)

    const plain = new PortalClient(app)
    const password = await plain.logIn('dana@example.com', PASSWORD)
    assert.equal(password.headers.location, '/portal/keys', 'the password alone logs in again')
  })

  test(`codes are throttled: after ${LOGIN_THROTTLE.maxCodesPerAccount} wrong ones even the right code gets 429 with Retry-After, from any browser`, { timeout: 60_000 }, async () => {
    const { app, store } = testApp()
    const { secret } = await turnOn(new PortalClient(app), store, 'erin@example.com')
    const window = [-1, 0, 1, 2].map((delta) => codeFor(secret, stepNow() + delta))
    const wrong = ['123456', '654321', '111111'].find((code) => !window.includes(code)) ?? ''
    const guesser = new PortalClient(app, '198.51.100.1')
    await passwordStep(guesser, 'erin@example.com')
    for (let attempt = 1; attempt <= LOGIN_THROTTLE.maxCodesPerAccount; attempt++) {
      // Each guess from an address of its own: the count is the account's.
      const elsewhere = new PortalClient(app, `198.51.100.${attempt}`)
      for (const [name, value] of guesser.cookies) elsewhere.cookies.set(name, value)
      assert.equal((await codeStep(elsewhere, wrong)).statusCode, 401, `guess ${attempt}`)
    }
    const owner = new PortalClient(app, '203.0.113.9')
    await passwordStep(owner, 'erin@example.com')
    const held = await codeStep(owner, codeFor(secret, stepNow()))
    assert.equal(held.statusCode, 429, held.body)
    assert.ok(Number(held.headers['retry-after']) > 0)
    assert.match(messageOf(held.body), /Too many codes tried for this account\. Try again in/)
  })

  test('bad input on the code forms: controls, over-long and empty codes get 400, a tampered or missing pending log-in starts again; never a 500', { timeout: 60_000 }, async () => {
    const { app, store } = testApp()
    const owner = new PortalClient(app)
    const { secret } = await turnOn(owner, store, 'fay@example.com')
    const step = stepNow()
    const browser = new PortalClient(app)
    await passwordStep(browser, 'fay@example.com')
    for (const [code, message] of [['12\u00003456', /must not contain control characters \(it contains U\+0000\)/], ['1'.repeat(33), /too long to be a code/], ['', /Type the code/], ['12\u202e3456', /U\+202E/]] as const) {
      const response = await codeStep(browser, code)
      assert.equal(response.statusCode, 400, JSON.stringify(code))
      assert.match(messageOf(response.body), message)
    }
    const page = await browser.get('/portal/login/code')
    const forged = await browser.post('/portal/login/code', { _csrf: 'x'.repeat(43), code: codeFor(secret, step) })
    assert.equal(forged.statusCode, 403, 'the pre-session CSRF token is checked')
    const pending = browser.cookies.get('portal_second_step') ?? ''
    browser.cookies.set('portal_second_step', pending.slice(0, -4) + (pending.endsWith('AAAA') ? 'BBBB' : 'AAAA'))
    const tampered = await browser.post('/portal/login/code', { _csrf: csrfTokenOf(page.body), code: codeFor(secret, step) })
    assert.equal(tampered.statusCode, 303)
    assert.equal(tampered.headers.location, '/portal/login?ended=1')
    assert.equal(browser.cookies.has('portal_session'), false)
    // The half-done log-in opens in its own browser only.
    const stranger = new PortalClient(app)
    await stranger.get('/portal/login')
    stranger.cookies.set('portal_second_step', pending)
    assert.equal((await stranger.get('/portal/login/code')).statusCode, 303)
    for (const code of ['\u0007', 'x'.repeat(40), '']) {
      const off = await owner.submit('/portal/two-step', '/portal/two-step/disable', { code })
      assert.equal(off.statusCode, 400, JSON.stringify(code))
    }
    assert.equal((await owner.post('/portal/two-step/disable', { code: codeFor(secret, step) })).statusCode, 403, 'turning off needs the session CSRF token')
  })

  test('accounts reset-2fa, run as the real CLI, turns it off (audited); the password alone logs in again', { timeout: 60_000 }, async () => {
    const { app, store, databaseUrl } = testApp()
    await turnOn(new PortalClient(app), store, 'gus@example.com')
    const env = { PATH: process.env.PATH ?? '', DATABASE_URL: databaseUrl, LOG_LEVEL: 'warn' }
    const reset = await runCli(['accounts', 'reset-2fa', '--email', 'gus@example.com'], env)
    assert.equal(reset.code, 0, reset.stderr)
    assert.match(reset.stdout, /Turned off two-step verification of gus@example\.com/)
    assert.deepEqual((await eventsOf(store, 'gus@example.com'))[0], { event: 'two_step_disabled', detail: 'removed by an operator' })
    const again = await runCli(['accounts', 'reset-2fa', '--email', 'gus@example.com'], env)
    assert.equal(again.code, 0, again.stderr)
    assert.match(again.stdout, /has no two-step verification: nothing to turn off/)
    const unknown = await runCli(['accounts', 'reset-2fa', '--email', 'nobody@example.com'], env)
    assert.notEqual(unknown.code, 0)
    assert.match(unknown.stderr, /nobody@example\.com/)
    const browser = new PortalClient(app)
    assert.equal((await browser.logIn('gus@example.com', PASSWORD)).headers.location, '/portal/keys')
  })
})

async function loginAs (app: FastifyInstance, email: string, userAgent: string, address: string): Promise<PortalClient> {
  const browser = new PortalClient(app, address)
  const page = await browser.get('/portal/login', { 'user-agent': userAgent })
  const response = await browser.post('/portal/login', { _csrf: csrfTokenOf(page.body), email, password: PASSWORD }, { 'user-agent': userAgent })
  assert.equal(response.statusCode, 303, response.body)
  assert.equal(response.headers.location, '/portal/keys')
  return browser
}

const FIREFOX = 'Mozilla/5.0 (X11; Linux x86_64; rv:128.0) Gecko/20100101 Firefox/128.0'
const SAFARI = 'Mozilla/5.0 (iPhone; CPU iPhone OS 17_5 like Mac OS X) AppleWebKit/605.1.15 (KHTML, like Gecko) Version/17.5 Mobile/15E148 Safari/604.1'

/** The handle of the session row whose browser cell matches. */
function handleOf (body: string, browser: string): string {
  const row = body.split('<tr').find((part) => part.includes(browser)) ?? ''
  const match = /name="session" value="([0-9a-f]{32})"/.exec(row)
  assert.ok(match?.[1], `no session of ${browser} in\n${body}`)
  return match[1]
}

describe(`portal sessions (${TEST_ENGINE})`, () => {
  test('the sessions page lists each session with its browser, address, start and last seen; one is signed out, then all', { timeout: 60_000 }, async () => {
    const { app, store } = testApp()
    await new PortalClient(app).signedUpAs(store, 'hal@example.com')
    const laptop = await loginAs(app, 'hal@example.com', FIREFOX, '192.0.2.10')
    const phone = await loginAs(app, 'hal@example.com', SAFARI, '2001:db8::7')
    const list = await laptop.get('/portal/sessions')
    assert.equal(list.statusCode, 200, list.body)
    assertPageSafe(list, 'the sessions page')
    assert.match(list.body, /Firefox on Linux <strong>\(this session\)<\/strong>/)
    assert.match(list.body, /Safari on iOS/)
    assert.match(list.body, /192\.0\.2\.10/)
    assert.match(list.body, /2001:db8::7/)
    assert.equal((list.body.match(/<tr(?: class="current")?>\s*<td data-label="Browser">/g) ?? []).length, 3, 'the sign-up session too')

    const forged = await laptop.post('/portal/sessions/end', { _csrf: 'forged', session: handleOf(list.body, 'Safari on iOS') })
    assert.equal(forged.statusCode, 403, 'the form needs the session CSRF token')
    const ended = await laptop.post('/portal/sessions/end', { _csrf: csrfTokenOf(list.body), session: handleOf(list.body, 'Safari on iOS') })
    assert.equal(ended.statusCode, 303, ended.body)
    assert.equal(ended.headers.location, '/portal/sessions?ended=1')
    const phoneAfter = await phone.get('/portal/keys')
    assert.equal(phoneAfter.headers.location, '/portal/login?ended=1', 'the signed-out session opens nothing')
    assert.equal((await laptop.get('/portal/keys')).statusCode, 200, 'this session goes on')
    for (const session of ['0'.repeat(32), 'not a handle', handleOf(list.body, 'Safari on iOS')]) {
      const unknown = await laptop.post('/portal/sessions/end', { _csrf: csrfTokenOf(list.body), session })
      assert.equal(unknown.statusCode, 404, session)
    }

    const everywhere = await laptop.post('/portal/sessions/end-all', { _csrf: csrfTokenOf(list.body) })
    assert.equal(everywhere.statusCode, 303)
    assert.equal(everywhere.headers.location, '/portal/login?everywhere=1')
    assert.match((await laptop.get('/portal/login?everywhere=1')).body, /signed out everywhere/)
    const account = await store.accounts.findByEmail('hal@example.com')
    assert.deepEqual(await store.sessions.listByAccount(account?.id ?? 0, new Date()), [])
    const events = await eventsOf(store, 'hal@example.com')
    assert.deepEqual(events.slice(0, 2), [
      { event: 'sessions_ended', detail: 'signed out everywhere (2 sessions)' },
      { event: 'sessions_ended', detail: 'one session signed out' }
    ])
  })

  test('another account\'s session cannot be signed out: its handle gets the same 404 as a made-up one', async () => {
    const { app, store } = testApp()
    await new PortalClient(app).signedUpAs(store, 'ivy@example.com')
    const mallory = new PortalClient(app)
    await mallory.signedUpAs(store, 'mallory@example.com')
    const ivy = await loginAs(app, 'ivy@example.com', FIREFOX, '192.0.2.20')
    const ivyHandle = handleOf((await ivy.get('/portal/sessions')).body, 'Firefox on Linux')
    const page = await mallory.get('/portal/sessions')
    const response = await mallory.post('/portal/sessions/end', { _csrf: csrfTokenOf(page.body), session: ivyHandle })
    assert.equal(response.statusCode, 404)
    assert.equal((await ivy.get('/portal/keys')).statusCode, 200)
    const account = await store.accounts.findByEmail('ivy@example.com')
    assert.equal((await store.sessions.listByAccount(account?.id ?? 0, new Date())).length, 2)
  })

  test('last seen is written at most once a minute per session, not on every request', async () => {
    const { app, store } = testApp()
    const browser = new PortalClient(app)
    await browser.signedUpAs(store, 'jo@example.com')
    const account = await store.accounts.findByEmail('jo@example.com')
    const [session] = await store.sessions.listByAccount(account?.id ?? 0, new Date())
    assert.ok(session)
    const first = session.lastSeenAt?.getTime()
    for (let index = 0; index < 5; index++) assert.equal((await browser.get('/portal/keys')).statusCode, 200)
    assert.equal((await store.sessions.findByTokenHash(session.tokenHash))?.lastSeenAt?.getTime(), first, 'no write within the minute')
    const twoMinutesAgo = new Date(Date.now() - 120_000)
    await store.sessions.extend(session.tokenHash, session.expiresAt, twoMinutesAgo)
    const before = Date.now()
    assert.equal((await browser.get('/portal/keys')).statusCode, 200)
    const seen = (await store.sessions.findByTokenHash(session.tokenHash))?.lastSeenAt?.getTime() ?? 0
    assert.ok(seen >= before, 'a request a minute or more after the last one seen is recorded')
    assert.match((await browser.get('/portal/sessions')).body, /less than a minute ago/)
  })
})
