// The developer portal: log-in throttling, device cookies and fair password checks (sign-up and log-in: portal.test.ts).
import { describe, test } from 'node:test'
import assert from 'node:assert/strict'
import type { FastifyInstance } from 'fastify'
import { DEVICE_COOKIE_MAX_AGE_MS, newDeviceCookie } from '../../src/core/device-cookies.js'
import { accountSubject, addressSubject, deviceSubject, LOGIN_THROTTLE, pairSubject, unknownDeviceLockMs } from '../../src/core/login-throttle.js'
import type { Store } from '../../src/storage/store.js'
import { buildTestApp } from '../helpers/build-app.js'
import { DEFAULT_HASH_COST_ENV } from '../helpers/password-cost.js'
import { csrfTokenOf, messageOf, PortalClient, TEST_PASSWORD } from '../helpers/portal-client.js'
import { secondInstance } from '../helpers/portal-app.js'

const PASSWORD = TEST_PASSWORD

// Each test builds its own app: throttles count per address and per email across the whole app.

describe('developer portal: throttling', () => {
  /**
   * A browser that has logged in to a new account of the email (and so holds a device cookie for it),
   * without its session: as after a log-out. The account comes from signedUpAs; the log-in is real.
   */
  async function knownBrowser (app: FastifyInstance, store: Store, email: string, address: string): Promise<PortalClient> {
    await new PortalClient(app).signedUpAs(store, email)
    const browser = new PortalClient(app, address)
    const loggedIn = await browser.logIn(email, PASSWORD)
    assert.equal(loggedIn.statusCode, 303, loggedIn.body)
    assert.ok(browser.cookies.has('portal_device'), 'logging in marks the browser as known')
    browser.cookies.delete('portal_session')
    return browser
  }

  test(`after ${LOGIN_THROTTLE.freeFailures} failed log-ins from other browsers, an email is locked for unknown browsers only, on every instance; a browser it logged in with still logs in`, { timeout: 120_000 }, async (t) => {
    const { app, store } = await buildTestApp(t)
    const other = await secondInstance(t, store)
    const victim = await knownBrowser(app, store, 'judy@example.com', '203.0.113.1')
    // All but the last two attempts filled through the store, as a log-in from an unknown browser counts one: each real
    // attempt costs a password check. The last two are real, one on each instance, and the lock holds on both.
    const policy = { forgetBefore: new Date(0), lockMsAfter: unknownDeviceLockMs }
    for (let attempt = 1; attempt <= LOGIN_THROTTLE.freeFailures - 2; attempt++) assert.equal((await store.loginAttempts.recordUnlessLocked(accountSubject('judy@example.com'), new Date(), policy)).allowed, true)
    for (let attempt = LOGIN_THROTTLE.freeFailures - 1; attempt <= LOGIN_THROTTLE.freeFailures; attempt++) {
      const instance = attempt % 2 === 0 ? app : other
      const response = await new PortalClient(instance, `192.0.2.${attempt}`).logIn('judy@example.com', `wrong password ${attempt}`)
      assert.equal(response.statusCode, 401, `attempt ${attempt}: ${response.body}`)
    }
    const attacker = await new PortalClient(other, '198.51.100.7').logIn('judy@example.com', PASSWORD)
    assert.equal(attacker.statusCode, 429, 'an unknown browser is refused, even with the right password')
    assert.ok(Number(attacker.headers['retry-after']) >= 1 && Number(attacker.headers['retry-after']) <= LOGIN_THROTTLE.firstLockMs / 1000, String(attacker.headers['retry-after']))
    assert.match(messageOf(attacker.body), /^Too many failed log-ins for this account from browsers it has not logged in with before\. .* Try again in \d+ seconds?\.$/)

    for (const instance of [app, other]) {
      const known = new PortalClient(instance, '203.0.113.1')
      for (const [name, value] of victim.cookies) if (name === 'portal_device') known.cookies.set(name, value)
      const response = await known.logIn('judy@example.com', PASSWORD)
      assert.equal(response.statusCode, 303, `the victim's own browser logs in during the attack: ${response.body}`)
    }
    const stillLocked = await new PortalClient(app, '198.51.100.8').logIn('judy@example.com', PASSWORD)
    assert.equal(stillLocked.statusCode, 429, "the victim's log-in does not lift the lock for the attacker")

    // An unknown email is locked the same way, so the lock tells nothing about which emails exist.
    for (let i = 0; i < LOGIN_THROTTLE.freeFailures; i++) await store.loginAttempts.recordUnlessLocked(accountSubject('nobody@example.com'), new Date(), { forgetBefore: new Date(0), lockMsAfter: unknownDeviceLockMs })
    const unknown = await new PortalClient(app, '198.51.100.9').logIn('nobody@example.com', PASSWORD)
    assert.equal(unknown.statusCode, 429)
    assert.equal(messageOf(unknown.body).replace(/\d+ seconds?/, 'N'), messageOf(attacker.body).replace(/\d+ seconds?/, 'N'))

    const someoneElse = await new PortalClient(app, '198.51.100.7').signUp('kim@example.com', PASSWORD)
    assert.equal(someoneElse.statusCode, 303, 'other accounts are not affected')
  })

  test('the lock on an email for unknown browsers grows with every attempt it lets through, up to its cap', { timeout: 60_000 }, async (t) => {
    const { app, store } = await buildTestApp(t)
    await new PortalClient(app).signedUpAs(store, 'ivan@example.com')
    // The free attempts and a few more, each made once the lock it caused had passed.
    const policy = { forgetBefore: new Date(0), lockMsAfter: unknownDeviceLockMs }
    const extra = 5
    let at = Date.now() - 2 * LOGIN_THROTTLE.maxLockMs * (LOGIN_THROTTLE.freeFailures + extra)
    for (let attempt = 1; attempt < LOGIN_THROTTLE.freeFailures + extra; attempt++) {
      const result = await store.loginAttempts.recordUnlessLocked(accountSubject('ivan@example.com'), new Date(at), policy)
      assert.equal(result.allowed, true)
      at += unknownDeviceLockMs(attempt) + 1
    }
    const waits: number[] = []
    for (const address of ['192.0.2.1', '192.0.2.2']) {
      const response = await new PortalClient(app, address).logIn('ivan@example.com', 'a wrong password')
      if (response.statusCode === 429) waits.push(Number(response.headers['retry-after']))
      else assert.equal(response.statusCode, 401, response.body)
    }
    const lock = unknownDeviceLockMs(LOGIN_THROTTLE.freeFailures + extra) / 1000
    assert.equal(waits.length, 1, 'the attempt after the wait goes through; the next is locked out')
    assert.ok((waits[0] ?? 0) > lock - 60 && (waits[0] ?? 0) <= lock, `Retry-After ${waits[0]} for a lock of ${lock} s`)
    assert.ok(lock > LOGIN_THROTTLE.firstLockMs / 1000 && lock <= LOGIN_THROTTLE.maxLockMs / 1000)
  })

  test(`one network is held to ${LOGIN_THROTTLE.maxPerPair} attempts at one email, without locking that email for other networks`, async (t) => {
    const { app, store } = await buildTestApp(t)
    await new PortalClient(app).signedUpAs(store, 'leo@example.com')
    const now = new Date()
    for (let i = 0; i < LOGIN_THROTTLE.maxPerPair; i++) await store.loginAttempts.record([pairSubject('leo@example.com', '203.0.113.5')], now, new Date(now.getTime() - LOGIN_THROTTLE.windowMs))
    const held = await new PortalClient(app, '203.0.113.5').logIn('leo@example.com', PASSWORD)
    assert.equal(held.statusCode, 429, held.body)
    assert.match(messageOf(held.body), /^Too many failed log-ins for this account from your network\. Try again in \d+ minutes\.$/)
    assert.equal((await new PortalClient(app, '198.51.100.1').logIn('leo@example.com', PASSWORD)).statusCode, 303, 'another network is not held')
  })

  test(`after ${LOGIN_THROTTLE.maxPerAddress} attempts from one address, log-ins and sign-ups from it are refused, other addresses are not`, async (t) => {
    const { app, store } = await buildTestApp(t)
    await new PortalClient(app).signedUpAs(store, 'leo@example.com')
    const now = new Date()
    // Filled through the store: fifty real log-ins would only make the test slow.
    for (let i = 1; i < LOGIN_THROTTLE.maxPerAddress; i++) await store.loginAttempts.record([addressSubject('203.0.113.5')], now, new Date(now.getTime() - LOGIN_THROTTLE.windowMs))
    const last = await new PortalClient(app, '203.0.113.5').logIn('leo@example.com', 'wrong password!')
    assert.equal(last.statusCode, 401, 'the last attempt the address may make')
    const logIn = await new PortalClient(app, '203.0.113.5').logIn('leo@example.com', PASSWORD)
    assert.equal(logIn.statusCode, 429, logIn.body)
    const signUp = await new PortalClient(app, '203.0.113.5').signUp('mia@example.com', PASSWORD)
    assert.equal(signUp.statusCode, 429, signUp.body)
    assert.match(messageOf(signUp.body), /Too many attempts from your network/)
    assert.equal((await new PortalClient(app, '203.0.113.9').logIn('leo@example.com', PASSWORD)).statusCode, 303)
  })

  test('the device cookie: long-lived, HttpOnly, Path=/portal, Secure over HTTPS, valid for its own email only, and its browser throttled on its own', { timeout: 60_000 }, async (t) => {
    const { app, store } = await buildTestApp(t, { TRUST_PROXY: '127.0.0.1' })
    await new PortalClient(app).signedUpAs(store, 'nora@example.com')
    const browser = new PortalClient(app, '127.0.0.1')
    const loggedIn = await browser.logIn('nora@example.com', PASSWORD)
    assert.equal(loggedIn.statusCode, 303, loggedIn.body)
    const deviceLine = [loggedIn.headers['set-cookie']].flat().find((line) => String(line).startsWith('portal_device='))
    assert.match(String(deviceLine), /^portal_device=v1\.\d+\.[A-Za-z0-9_-]{22}\.[A-Za-z0-9_-]{43}; Max-Age=31536000; Path=\/portal; HttpOnly; SameSite=Lax$/)
    assert.equal(String(deviceLine).includes('nora'), false, 'the email is not in the cookie')
    const https = new PortalClient(app)
    const page = await https.get('/portal/login', { 'x-forwarded-proto': 'https' })
    const secure = await https.post('/portal/login', { _csrf: csrfTokenOf(page.body), email: 'nora@example.com', password: PASSWORD }, { 'x-forwarded-proto': 'https' })
    assert.match(String([secure.headers['set-cookie']].flat().find((line) => String(line).startsWith('portal_device='))), /; Secure/)

    // Nora's cookie does nothing for another email, and a tampered one does nothing for hers.
    await new PortalClient(app).signedUpAs(store, 'omar@example.com')
    const cookie = browser.cookies.get('portal_device') ?? ''
    for (let i = 0; i < LOGIN_THROTTLE.freeFailures; i++) {
      await store.loginAttempts.recordUnlessLocked(accountSubject('omar@example.com'), new Date(), { forgetBefore: new Date(0), lockMsAfter: unknownDeviceLockMs })
      await store.loginAttempts.recordUnlessLocked(accountSubject('nora@example.com'), new Date(), { forgetBefore: new Date(0), lockMsAfter: unknownDeviceLockMs })
    }
    const withCookie = (value: string): PortalClient => {
      const client = new PortalClient(app, '203.0.113.3')
      client.cookies.set('portal_device', value)
      return client
    }
    assert.equal((await withCookie(cookie).logIn('omar@example.com', PASSWORD)).statusCode, 429, "another email's lock holds")
    assert.equal((await withCookie(`${cookie.slice(0, -2)}AA`).logIn('nora@example.com', PASSWORD)).statusCode, 429, 'a tampered cookie is no device cookie')
    assert.equal((await withCookie(cookie).logIn('nora@example.com', PASSWORD)).statusCode, 303, 'her own browser is let in')

    // A known browser guessing wrong is held by its own count, not by the email's: one real failure, the rest filled through the store.
    assert.equal((await withCookie(cookie).logIn('nora@example.com', 'wrong password')).statusCode, 401)
    const now = new Date()
    for (let attempt = 2; attempt <= LOGIN_THROTTLE.maxPerDevice; attempt++) {
      await store.loginAttempts.record([deviceSubject(cookie.split('.')[2] ?? '')], now, new Date(now.getTime() - LOGIN_THROTTLE.windowMs))
    }
    const held = await withCookie(cookie).logIn('nora@example.com', PASSWORD)
    assert.equal(held.statusCode, 429)
    assert.match(messageOf(held.body), /^Too many failed log-ins from this browser\./)
  })

  test('a device cookie older than its Max-Age no longer lets its browser past the lock on the email; a younger one does', { timeout: 60_000 }, async (t) => {
    const { app, store } = await buildTestApp(t)
    await new PortalClient(app).signedUpAs(store, 'pia@example.com')
    for (let i = 0; i < LOGIN_THROTTLE.freeFailures; i++) {
      await store.loginAttempts.recordUnlessLocked(accountSubject('pia@example.com'), new Date(), { forgetBefore: new Date(0), lockMsAfter: unknownDeviceLockMs })
    }
    // Cookies the service issued to her browsers long ago, under the secret every instance shares: a test cannot wait a year.
    const secret = await store.setting('portal_device_secret', () => '')
    assert.ok(secret.length > 0, 'the portal has made its secret')
    const issued = (ageMs: number): PortalClient => {
      const client = new PortalClient(app, '203.0.113.4')
      client.cookies.set('portal_device', newDeviceCookie(secret, 'pia@example.com', new Date(Date.now() - ageMs)))
      return client
    }
    const expired = await issued(DEVICE_COOKIE_MAX_AGE_MS + 60 * 60_000).logIn('pia@example.com', PASSWORD)
    assert.equal(expired.statusCode, 429, `an expired cookie is an unknown browser: ${expired.body}`)
    assert.match(messageOf(expired.body), /from browsers it has not logged in with before/)
    const young = await issued(DEVICE_COOKIE_MAX_AGE_MS - 60 * 60_000).logIn('pia@example.com', PASSWORD)
    assert.equal(young.statusCode, 303, `a cookie within its Max-Age still counts: ${young.body}`)
  })

  test('password checks are shared fairly: many concurrent log-ins from a few addresses get 429 beyond one each, and a newcomer is neither refused nor queued behind them', { timeout: 60_000 }, async (t) => {
    // At the default cost: the queue is the subject, and it fills only while checks take as long as real ones.
    const { app, store } = await buildTestApp(t, DEFAULT_HASH_COST_ENV)
    const honest = await knownBrowser(app, store, 'honest@example.com', '203.0.113.77')
    const attackers = ['192.0.2.10', '192.0.2.11', '192.0.2.12'].map((address) => new PortalClient(app, address))
    const tokens = await Promise.all(attackers.map(async (attacker) => csrfTokenOf((await attacker.get('/portal/login')).body)))
    const honestToken = csrfTokenOf((await honest.get('/portal/login')).body)

    const finished: string[] = []
    const attacks = attackers.flatMap((attacker, index) => Array.from({ length: 45 }, async (_, n) => {
      const response = await attacker.post('/portal/login', { _csrf: tokens[index] ?? '', email: `guess${n}@example.com`, password: 'not the password' })
      finished.push(`attacker ${response.statusCode}`)
      return response
    }))
    const honestAnswer = honest.post('/portal/login', { _csrf: honestToken, email: 'honest@example.com', password: PASSWORD }).then((response) => {
      finished.push('honest')
      return response
    })
    const [answer, ...answers] = await Promise.all([honestAnswer, ...attacks])
    assert.equal(answer?.statusCode, 303, `the honest client logs in: ${answer?.body ?? ''}`)
    const statuses = answers.map((response) => response.statusCode)
    assert.deepEqual([...new Set(statuses)].sort(), [401, 429], statuses.join(' '))
    const refused = answers.find((response) => response.statusCode === 429)
    assert.match(String(refused?.headers['retry-after']), /^[1-9]\d*$/)
    assert.match(String(refused?.headers['content-type']), /^text\/html/)
    assert.match(messageOf(refused?.body ?? ''), /^Another log-in or sign-up from your network is being checked\. Try again in \d+ seconds?\.$/)
    const checkedBefore = finished.slice(0, finished.indexOf('honest')).filter((entry) => entry === 'attacker 401').length
    assert.ok(checkedBefore <= 2 * attackers.length, `${checkedBefore} attackers' passwords were checked before the honest client's`)
  })
})
