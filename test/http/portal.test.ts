import { spawn } from 'node:child_process'
import { once } from 'node:events'
import { existsSync, readFileSync } from 'node:fs'
import { request as httpRequest } from 'node:http'
import { Writable } from 'node:stream'
import { describe, test, type TestContext } from 'node:test'
import assert from 'node:assert/strict'
import type { FastifyInstance } from 'fastify'
import { pino } from 'pino'
import { loggerOptions } from '../../src/app.js'
import { loadConfig } from '../../src/config.js'
import { DEVICE_COOKIE_MAX_AGE_MS, newDeviceCookie } from '../../src/core/device-cookies.js'
import { accountSubject, addressSubject, deviceSubject, LOGIN_THROTTLE, pairSubject, unknownDeviceLockMs } from '../../src/core/login-throttle.js'
import { generateApiKey, KEY_CHANGE_LIMIT, keyChangeSubject, MAX_LIVE_KEYS, newKeyId } from '../../src/core/api-keys.js'
import { hashSessionToken } from '../../src/core/sessions.js'
import { createAccount } from '../../src/services/accounts.js'
import type { Store } from '../../src/storage/store.js'
import { buildServedApp, buildTestApp, openTestStore, suiteTestApp, TEST_DEFAULTS } from '../helpers/build-app.js'
import { eventually } from '../helpers/eventually.js'
import { assertNoInlineCode, assertPortalHeaders, CSP, csrfTokenOf, DEFAULT_KEY_FIELDS, messageOf, PortalClient, TEST_PASSWORD } from '../helpers/portal-client.js'
import { startServer } from '../helpers/start-server.js'
import { CLI_PATH, runCli } from '../helpers/spawn-cli.js'

const PASSWORD = TEST_PASSWORD

/**
 * The app most tests share: each keeps to emails of its own. Tests that look at the whole outbox, throttle
 * addresses or emails, or need a logger or configuration of their own build their own app.
 */
const testApp = suiteTestApp()

async function secondInstance (t: TestContext, store: Store, env: Record<string, string> = {}): Promise<FastifyInstance> {
  const app = await buildServedApp({ config: loadConfig({ ...TEST_DEFAULTS, ...env }), store, logger: pino({ level: 'silent' }) })
  t.after(() => app.close())
  return app
}

async function apiStatus (app: FastifyInstance, key: string): Promise<number> {
  return (await app.inject({ url: '/v1/pets', headers: { authorization: `Bearer ${key}` } })).statusCode
}

/** Polls until the key is refused; returns how long that took. */
async function msUntilRefused (app: FastifyInstance, key: string, since: number): Promise<number> {
  for (;;) {
    const status = await apiStatus(app, key)
    if (status === 401) return performance.now() - since
    assert.equal(status, 200)
    if (performance.now() - since > 5000) assert.fail('the revoked key was still accepted after 5 s')
    await new Promise((resolve) => setTimeout(resolve, 20))
  }
}

/** Body without what legitimately differs between two answers to the same form: the email typed. */
const withoutEmail = (body: string, email: string): string => body.replaceAll(email, 'EMAIL')

/** The first-request snippet as the browser shows it (entities decoded). */
function snippetOf (body: string): string {
  const match = /<code id="snippet">([^<]*)<\/code>/.exec(body)
  assert.ok(match?.[1], body)
  return match[1].replaceAll('&quot;', '"').replaceAll('&#39;', "'").replaceAll('&lt;', '<').replaceAll('&gt;', '>').replaceAll('&amp;', '&')
}

describe('developer portal: sign-up and log-in', () => {
  test('/portal sends visitors to the log-in page, which needs no API key and links to sign-up', async (t) => {
    const { app } = testApp()
    const home = await app.inject({ url: '/portal' })
    assert.equal(home.statusCode, 303)
    assert.equal(home.headers.location, '/portal/login')
    const page = await app.inject({ url: '/portal/login' })
    assert.equal(page.statusCode, 200, page.body)
    assert.match(String(page.headers['content-type']), /^text\/html; charset=utf-8$/)
    assert.match(page.body, /<label for="email">Email<\/label>\s*<input id="email" name="email" type="email"/)
    assert.match(page.body, /<label for="password">Password<\/label>\s*<input id="password" name="password" type="password"/)
    assert.match(page.body, /href="\/portal\/signup"/)
    assert.match(page.body, /href="\/docs"/)
    csrfTokenOf(page.body)
  })

  test('sign-up creates an account with an scrypt hash, logs it in and shows its (empty) keys page', async (t) => {
    const { app, store } = testApp()
    const browser = new PortalClient(app)
    const signedUp = await browser.signUp(' New.User@Example.com ', PASSWORD)
    assert.equal(signedUp.statusCode, 303, signedUp.body)
    assert.equal(signedUp.headers.location, '/portal/keys')
    const credentials = await store.accounts.findCredentials('new.user@example.com')
    assert.ok(credentials, 'the account exists under the normalised email')
    assert.match(credentials.passwordHash ?? '', /^\$scrypt\$ln=17,r=8,p=1\$[A-Za-z0-9+/]{22}\$[A-Za-z0-9+/]{43}$/)
    assert.equal(credentials.passwordHash?.includes(PASSWORD), false)
    const keys = await browser.get('/portal/keys')
    assert.equal(keys.statusCode, 200, keys.body)
    assert.match(keys.body, /new\.user@example\.com/)
    assert.match(keys.body, /You have no keys yet/)
  })

  test('sign-up answers a taken email as it answers a new one, makes no second account and mails the owner instead', async (t) => {
    const { app, store } = await buildTestApp(t)
    // The first sign-up, up to its account: logging in with its password is checked at the end.
    const first = await new PortalClient(app).submit('/portal/signup', '/portal/signup', { email: 'taken@example.com', password: PASSWORD })
    assert.equal(first.statusCode, 200, first.body)
    await eventually(async () => { assert.ok(await store.accounts.findByEmail('taken@example.com'), 'the first sign-up made its account') }, { timeout: 10_000 })
    await createAccount(store, { email: 'operator-made@example.com' })
    // What is left of an answer once the email it names is taken out: headers that vary per answer aside.
    const shape = (answer: Awaited<ReturnType<PortalClient['submit']>>, email: string): unknown => ({
      status: answer.statusCode,
      body: answer.body.split(email).join('EMAIL'),
      headers: Object.fromEntries(Object.entries(answer.headers).filter(([name]) => !['date', 'x-request-id', 'content-length'].includes(name)))
    })
    const fresh = await new PortalClient(app).submit('/portal/signup', '/portal/signup', { email: 'fresh@example.com', password: 'another long password' })
    assert.equal(fresh.statusCode, 200, fresh.body)
    assert.match(fresh.body, /We sent a link to fresh@example\.com/)
    for (const email of ['taken@example.com', 'TAKEN@example.com', 'operator-made@example.com']) {
      const again = await new PortalClient(app).submit('/portal/signup', '/portal/signup', { email, password: 'another long password' })
      assert.deepEqual(shape(again, email.toLowerCase()), shape(fresh, 'fresh@example.com'), `${email}: the same answer as for a new email`)
    }
    const told = async (recipient: string, count: number): Promise<void> => {
      await eventually(async () => {
        const mail = (await store.mailOutbox.list({ pendingOnly: false, limit: 100 })).filter((row) => row.recipient === recipient && row.kind === 'sign_up_existing')
        assert.equal(mail.length, count, `${recipient}: "someone tried to sign up" messages`)
        assert.match(mail[0]?.text ?? '', /already has an account\. No second account was made[\s\S]*\/portal\/login/)
      }, { timeout: 10_000 })
    }
    await told('taken@example.com', 2)
    await told('operator-made@example.com', 1)
    await eventually(async () => { assert.ok(await store.accounts.findByEmail('fresh@example.com'), 'the new email got its account') }, { timeout: 10_000 })
    const taken = await store.accounts.findByEmail('taken@example.com')
    assert.ok(taken)
    assert.deepEqual((await store.audit.page(taken.id, { limit: 100 })).filter((event) => event.event === 'account_created').length, 1, 'made once, not again')
    const verifications = (await store.mailOutbox.list({ pendingOnly: false, limit: 100 })).filter((row) => row.kind === 'verify_email').map((row) => row.recipient)
    assert.deepEqual(verifications.sort(), ['fresh@example.com', 'taken@example.com'], 'a verification link for each new email only')
    assert.equal((await store.accounts.findCredentials('operator-made@example.com'))?.passwordHash, null, 'the CLI account got no password')
    const owner = new PortalClient(app)
    assert.equal((await owner.logIn('taken@example.com', PASSWORD)).statusCode, 303, 'the first password still logs in')
    assert.equal((await new PortalClient(app).logIn('taken@example.com', 'another long password')).statusCode, 401, 'the second one does not')
  })

  test('the "someone tried to sign up" message is limited per account, and the answer stays the same past the limit', async (t) => {
    const { app, store } = await buildTestApp(t)
    await createAccount(store, { email: 'popular@example.com' })
    for (let attempt = 0; attempt < 5; attempt++) {
      const answer = await new PortalClient(app, `198.51.100.${attempt + 1}`).submit('/portal/signup', '/portal/signup', { email: 'popular@example.com', password: PASSWORD })
      assert.equal(answer.statusCode, 200, answer.body)
      assert.match(answer.body, /Check your email/)
    }
    const sent = async (): Promise<number> => (await store.mailOutbox.list({ pendingOnly: false, limit: 100 })).filter((row) => row.kind === 'sign_up_existing').length
    await eventually(async () => { assert.equal(await sent(), 3) }, { timeout: 10_000 })
  })

  test('sign-up refuses a password under 12 characters and an invalid email with 400, creating nothing', async (t) => {
    const { app, store } = testApp()
    const short = await new PortalClient(app).signUp('short@example.com', 'elevenchars')
    assert.equal(short.statusCode, 400, short.body)
    assert.equal(messageOf(short.body), 'The password must be at least 12 characters long.')
    assert.equal(await store.accounts.findByEmail('short@example.com'), undefined)
    const invalid = await new PortalClient(app).signUp('not-an-email', PASSWORD)
    assert.equal(invalid.statusCode, 400, invalid.body)
    assert.match(messageOf(invalid.body), /valid email address/)
  })

  test('log-in with the right password starts a session; the cookie is HttpOnly, SameSite=Lax, Path=/portal and holds a token whose digest only is stored', async (t) => {
    const { app, store } = testApp()
    await new PortalClient(app).signedUpAs(store, 'alice@example.com')
    const browser = new PortalClient(app)
    const response = await browser.logIn('Alice@example.com', PASSWORD)
    assert.equal(response.statusCode, 303, response.body)
    assert.equal(response.headers.location, '/portal/keys')
    const cookie = [response.headers['set-cookie']].flat().find((line) => String(line).startsWith('portal_session='))
    assert.match(String(cookie), /^portal_session=[A-Za-z0-9_-]{43}; Path=\/portal; HttpOnly; SameSite=Lax$/)
    const token = browser.cookies.get('portal_session') ?? ''
    assert.ok(await store.sessions.findByTokenHash(hashSessionToken(token)), 'the session is found by the digest')
    assert.equal(await store.sessions.findByTokenHash(token), undefined, 'the token itself is not stored')
    assert.equal(browser.cookies.has('portal_presession'), false, 'the pre-session cookie is cleared')
    assert.equal((await browser.get('/portal/keys')).statusCode, 200)
    assert.equal((await browser.get('/portal/login')).headers.location, '/portal/keys', 'a logged-in visitor skips the log-in page')
  })

  test('logging in again (from a tab opened before) replaces the session: the earlier one ends', async (t) => {
    const { app, store } = testApp()
    await new PortalClient(app).signedUpAs(store, 'abby@example.com')
    const browser = new PortalClient(app)
    const page = await browser.get('/portal/login')
    const nonce = browser.cookies.get('portal_presession') ?? ''
    const fields = { _csrf: csrfTokenOf(page.body), email: 'abby@example.com', password: PASSWORD }
    assert.equal((await browser.post('/portal/login', fields)).statusCode, 303)
    const first = browser.cookies.get('portal_session') ?? ''
    browser.cookies.set('portal_presession', nonce)
    assert.equal((await browser.post('/portal/login', fields)).statusCode, 303)
    const second = browser.cookies.get('portal_session') ?? ''
    assert.notEqual(second, first, 'a new token at every log-in')
    assert.equal(await store.sessions.findByTokenHash(hashSessionToken(first)), undefined)
    assert.ok(await store.sessions.findByTokenHash(hashSessionToken(second)))
  })

  test('wrong password, unknown email and an account without a password get the same 401 page, in similar time', async (t) => {
    const { app, store } = testApp()
    await new PortalClient(app).signedUpAs(store, 'amy@example.com')
    await createAccount(store, { email: 'no-password@example.com' })
    const attempt = async (email: string, password: string): Promise<{ status: number, body: string, ms: number }> => {
      const browser = new PortalClient(app)
      const page = await browser.get('/portal/login')
      const started = performance.now()
      const response = await browser.post('/portal/login', { _csrf: csrfTokenOf(page.body), email, password })
      return { status: response.statusCode, body: withoutEmail(response.body.replace(csrfTokenOf(response.body), 'TOKEN'), email), ms: performance.now() - started }
    }
    const wrong = [await attempt('amy@example.com', 'not the password'), await attempt('amy@example.com', 'not the password either')]
    const unknown = [await attempt('nobody@example.com', PASSWORD), await attempt('nobody-else@example.com', PASSWORD)]
    const passwordless = await attempt('no-password@example.com', PASSWORD)
    for (const answer of [...wrong, ...unknown, passwordless]) {
      assert.equal(answer.status, 401, answer.body)
      assert.equal(answer.body, wrong[0]?.body)
    }
    assert.equal(messageOf(wrong[0]?.body ?? ''), 'The email address or the password is not correct.')
    // An unknown email is checked against a dummy scrypt hash: it takes as long, not a lookup's few milliseconds.
    const fastest = (answers: Array<{ ms: number }>): number => Math.min(...answers.map((answer) => answer.ms))
    assert.ok(fastest(unknown) > fastest(wrong) / 3, `unknown email ${fastest(unknown)} ms vs wrong password ${fastest(wrong)} ms`)
    assert.ok(passwordless.ms > fastest(wrong) / 3, `account without password ${passwordless.ms} ms vs wrong password ${fastest(wrong)} ms`)
  })

  test('log-out ends the session on the server: the old cookie opens nothing and its forms do nothing', async (t) => {
    const { app, store } = testApp()
    const browser = new PortalClient(app)
    await browser.signedUpAs(store, 'bob@example.com')
    const keysPage = await browser.get('/portal/keys')
    const token = csrfTokenOf(keysPage.body)
    const oldCookie = browser.cookies.get('portal_session') ?? ''
    const loggedOut = await browser.post('/portal/logout', { _csrf: token })
    assert.equal(loggedOut.statusCode, 303, loggedOut.body)
    assert.equal(loggedOut.headers.location, '/portal/login?logged_out=1')
    assert.equal(browser.cookies.has('portal_session'), false, 'the cookie is cleared')
    assert.equal(await store.sessions.findByTokenHash(hashSessionToken(oldCookie)), undefined, 'the session is deleted')
    assert.equal(messageOf((await browser.get('/portal/login?logged_out=1')).body), 'You have logged out.')

    const replay = new PortalClient(app)
    replay.cookies.set('portal_session', oldCookie)
    const page = await replay.get('/portal/keys')
    assert.equal(page.statusCode, 303)
    assert.equal(page.headers.location, '/portal/login?ended=1')
    const post = await replay.post('/portal/keys', { _csrf: token, ...DEFAULT_KEY_FIELDS, label: 'after logout' }, { cookie: `portal_session=${oldCookie}` })
    assert.equal(post.statusCode, 303)
    const account = await store.accounts.findByEmail('bob@example.com')
    assert.deepEqual(await store.apiKeys.listByAccount(account?.id ?? 0), [], 'no key was generated with the ended session')
  })

  test('an expired session is refused and deleted', async (t) => {
    const { app, store } = testApp()
    const browser = new PortalClient(app)
    await browser.signedUpAs(store, 'carol@example.com')
    const tokenHash = hashSessionToken(browser.cookies.get('portal_session') ?? '')
    await store.sessions.extend(tokenHash, new Date(Date.now() - 1000), new Date(Date.now() - 2000))
    const page = await browser.get('/portal/keys')
    assert.equal(page.statusCode, 303)
    assert.equal(page.headers.location, '/portal/login?ended=1')
    assert.equal(await store.sessions.findByTokenHash(tokenHash), undefined)
  })

  test('cookies are Secure over HTTPS: behind a proxy named in TRUST_PROXY, or when PUBLIC_BASE_URL is https; X-Forwarded-Proto from others is ignored', async (t) => {
    const cookieOf = async (env: Record<string, string>, headers: Record<string, string>): Promise<string> => {
      const app = await secondInstance(t, testApp().store, env)
      const response = await app.inject({ url: '/portal/login', headers })
      return String(response.headers['set-cookie'])
    }
    assert.doesNotMatch(await cookieOf({}, { 'x-forwarded-proto': 'https' }), /Secure/)
    assert.match(await cookieOf({ TRUST_PROXY: '127.0.0.1' }, { 'x-forwarded-proto': 'https' }), /; Secure/)
    assert.doesNotMatch(await cookieOf({ TRUST_PROXY: '10.0.0.0/8' }, { 'x-forwarded-proto': 'https' }), /Secure/)
    assert.match(await cookieOf({ PUBLIC_BASE_URL: 'https://api.example.com/v1' }, {}), /; Secure/)
  })
})

describe('developer portal: CSRF', () => {
  test('sign-up and log-in posts without the token, with a wrong one or without the pre-session cookie get 403 and change nothing', async (t) => {
    const { app, store } = testApp()
    await new PortalClient(app).signedUpAs(store, 'dave@example.com')
    for (const path of ['/portal/signup', '/portal/login']) {
      const browser = new PortalClient(app)
      const page = await browser.get(path)
      const token = csrfTokenOf(page.body)
      const other = new PortalClient(app)
      const otherToken = csrfTokenOf((await other.get(path)).body)
      const email = path === '/portal/login' ? 'dave@example.com' : 'eve@example.com'
      const attempts: Array<{ label: string, fields: Record<string, string> }> = [
        { label: 'no token', fields: { email, password: PASSWORD } },
        { label: 'empty token', fields: { _csrf: '', email, password: PASSWORD } },
        { label: 'wrong token', fields: { _csrf: `${token.slice(0, -2)}xx`, email, password: PASSWORD } },
        { label: "another browser's token", fields: { _csrf: otherToken, email, password: PASSWORD } }
      ]
      for (const { label, fields } of attempts) {
        const response = await browser.post(path, fields)
        assert.equal(response.statusCode, 403, `${path}, ${label}: ${response.body}`)
        assert.match(messageOf(response.body), /form has expired or was not sent from this site/)
        assert.equal(browser.cookies.has('portal_session'), false, `${path}, ${label}`)
      }
      const cookieless = await app.inject({ method: 'POST', url: path, headers: { 'content-type': 'application/x-www-form-urlencoded' }, payload: new URLSearchParams({ _csrf: token, email, password: PASSWORD }).toString() })
      assert.equal(cookieless.statusCode, 403, `${path} without the pre-session cookie`)
      const asJson = await app.inject({ method: 'POST', url: path, headers: { 'content-type': 'application/json', cookie: `portal_presession=${browser.cookies.get('portal_presession') ?? ''}` }, payload: JSON.stringify({ _csrf: token, email, password: PASSWORD }) })
      assert.equal(asJson.statusCode, 415, `${path} with a JSON body: not read, whatever it holds`)
      assert.equal((await browser.post(path, { _csrf: token, email, password: PASSWORD })).statusCode, path === '/portal/signup' ? 200 : 303, `${path} with its token`)
    }
    await eventually(async () => { assert.equal((await store.accounts.findByEmail('eve@example.com'))?.email, 'eve@example.com') }, { timeout: 10_000 })
  })

  test("forms of a session need the session's token: generate, roll, revoke and log out refuse a missing, wrong or other session's token", async (t) => {
    const { app, store } = testApp()
    const alice = new PortalClient(app)
    await alice.signedUpAs(store, 'april@example.com')
    const { key } = await alice.generateKey('kept')
    const [row] = await store.apiKeys.listByAccount((await store.accounts.findByEmail('april@example.com'))?.id ?? 0)
    const mallory = new PortalClient(app)
    await mallory.signedUpAs(store, 'mallory@example.com')
    const malloryToken = csrfTokenOf((await mallory.get('/portal/keys')).body)
    const aliceToken = csrfTokenOf((await alice.get('/portal/keys')).body)

    for (const [label, fields] of [['no token', {}], ['wrong token', { _csrf: aliceToken.split('').reverse().join('') }], ["another session's token", { _csrf: malloryToken }]] as const) {
      const generate = await alice.post('/portal/keys', { ...fields, ...DEFAULT_KEY_FIELDS, label: 'forged' })
      assert.equal(generate.statusCode, 403, `generate, ${label}: ${generate.body}`)
      assert.doesNotMatch(generate.body, /new-key-value/)
      const revoke = await alice.post(`/portal/keys/${row?.id ?? ''}/revoke`, fields)
      assert.equal(revoke.statusCode, 403, `revoke, ${label}`)
      const roll = await alice.post(`/portal/keys/${row?.id ?? ''}/roll`, { ...fields, grace: '0' })
      assert.equal(roll.statusCode, 403, `roll, ${label}`)
      assert.doesNotMatch(roll.body, /new-key-value/)
      const logout = await alice.post('/portal/logout', fields)
      assert.equal(logout.statusCode, 403, `log-out, ${label}`)
    }
    assert.equal((await store.apiKeys.listByAccount(row?.accountId ?? 0)).length, 1, 'no key was generated nor rolled')
    assert.equal(await apiStatus(app, key), 200, 'the key was not revoked')
    assert.equal((await alice.get('/portal/keys')).statusCode, 200, 'the session is still open')
  })
})

describe('developer portal: keys', () => {
  test('a generated key is shown once, with a warning and copy buttons, on the no-store page the post redirects to, and works on the API at once', async (t) => {
    const { app, store, databaseUrl } = testApp()
    const browser = new PortalClient(app)
    await browser.signedUpAs(store, 'frank@example.com')
    const { response, key } = await browser.generateKey('laptop')
    assert.equal(response.headers['cache-control'], 'no-store')
    assert.match(response.body, /Copy this key now: it will not be shown again/)
    assert.match(response.body, /<button type="button" class="copy" data-copy="new-key-value" data-status="new-key-status" hidden>Copy key<\/button>/)
    assert.match(response.body, /<script src="\/portal\/assets\/copy\.js\?v=[A-Za-z0-9_-]+" defer><\/script>/)
    assert.equal(snippetOf(response.body), `export ANIMAL_STORE_KEY='${key}'\ncurl -s "http://localhost:80/v1/pets?limit=5" -H "Authorization: Bearer $ANIMAL_STORE_KEY"`)
    assert.equal(await apiStatus(app, key), 200, 'the key works at once')

    const later = await browser.get('/portal/keys')
    assert.equal(later.body.includes(key), false, 'the secret is never shown again')
    assert.equal(later.body.includes(key.slice(12)), false)
    assert.match(later.body, /<td data-label="Label"><a href="\/portal\/keys\/key_[0-9A-Za-z]{16}" aria-label="Usage and details of the key laptop">laptop<\/a><\/td>/)
    assert.ok(later.body.includes(`<code>${key.slice(0, 12)}&hellip;</code>`), 'the prefix identifies the key')
    assert.match(later.body, /<td data-label="Last used"><span class="muted">never<\/span><\/td>|<td data-label="Last used"><time/)
    assert.match(later.body, /<td data-label="Status">Active<\/td>/)

    const account = await store.accounts.findByEmail('frank@example.com')
    const [row] = await store.apiKeys.listByAccount(account?.id ?? 0)
    const listed = await runCli(['keys', 'list', '--email', 'frank@example.com', '--json'], { PATH: process.env.PATH ?? '', DATABASE_URL: databaseUrl })
    assert.equal(listed.code, 0, listed.stderr)
    assert.deepEqual((JSON.parse(listed.stdout) as Array<{ id: string, label: string }>).map(({ id, label }) => ({ id, label })), [{ id: row?.id, label: 'laptop' }], 'the CLI lists the portal key')
  })

  test('the first-request snippet uses PUBLIC_BASE_URL when set', async (t) => {
    const { store } = testApp()
    const app = await secondInstance(t, store, { PUBLIC_BASE_URL: 'https://api.example.com/v1' })
    const browser = new PortalClient(app)
    await browser.signedUpAs(store, 'grace@example.com')
    const page = await browser.get('/portal/keys')
    assert.match(snippetOf(page.body), /^export ANIMAL_STORE_KEY='paste-your-key-here'\ncurl -s "https:\/\/api\.example\.com\/v1\/pets\?limit=5"/)
  })

  test('revoking asks for confirmation, then the key is refused within 1 s on every instance and shown revoked in the portal and the CLI', async (t) => {
    const { app, store, databaseUrl } = testApp()
    const other = await secondInstance(t, store)
    const browser = new PortalClient(app)
    await browser.signedUpAs(store, 'heidi@example.com')
    const { key } = await browser.generateKey('to revoke')
    const kept = await browser.generateKey('to keep')
    assert.equal(await apiStatus(app, key), 200)
    assert.equal(await apiStatus(other, key), 200, 'both instances have verified (and cached) the key')
    const [row] = await store.apiKeys.listByAccount((await store.accounts.findByEmail('heidi@example.com'))?.id ?? 0)
    assert.ok(row)

    const confirm = await browser.get(`/portal/keys/${row.id}/revoke`)
    assert.equal(confirm.statusCode, 200, confirm.body)
    assert.match(confirm.body, /Revoke the key &ldquo;to revoke&rdquo;\?/)
    const revoked = await browser.post(`/portal/keys/${row.id}/revoke`, { _csrf: csrfTokenOf(confirm.body) })
    const since = performance.now()
    assert.equal(revoked.statusCode, 303, revoked.body)
    assert.equal(revoked.headers.location, `/portal/keys?revoked=${row.id}`)
    const [first, second] = await Promise.all([msUntilRefused(app, key, since), msUntilRefused(other, key, since)])
    assert.ok(first < 1000 && second < 1000, `refused after ${first} and ${second} ms`)
    assert.equal(await apiStatus(app, kept.key), 200, 'the other key still works')

    const page = await browser.get(revoked.headers.location)
    assert.match(messageOf(page.body), /The key to revoke has been revoked/)
    assert.match(page.body, /<td data-label="Status">Revoked <time/)
    const listed = await runCli(['keys', 'list', '--email', 'heidi@example.com', '--json'], { PATH: process.env.PATH ?? '', DATABASE_URL: databaseUrl })
    const cliRow = (JSON.parse(listed.stdout) as Array<{ id: string, revokedAt: string | null }>).find(({ id }) => id === row.id)
    assert.match(cliRow?.revokedAt ?? '', /^\d{4}-/)
  })

  test('one account never sees nor revokes the keys of another: its id gets the same 404 as an unknown one', async (t) => {
    const { app, store } = testApp()
    const alice = new PortalClient(app)
    await alice.signedUpAs(store, 'agnes@example.com')
    const { key: aliceKey } = await alice.generateKey('alice secret project')
    const [aliceRow] = await store.apiKeys.listByAccount((await store.accounts.findByEmail('agnes@example.com'))?.id ?? 0)
    assert.ok(aliceRow)
    const bob = new PortalClient(app)
    await bob.signedUpAs(store, 'ben@example.com')
    await bob.generateKey('bob key')

    const bobPage = await bob.get('/portal/keys')
    assert.match(bobPage.body, /bob key/)
    assert.doesNotMatch(bobPage.body, /alice secret project/)
    assert.equal(bobPage.body.includes(aliceRow.prefix), false)
    assert.equal(bobPage.body.includes(aliceRow.id), false)

    const token = csrfTokenOf(bobPage.body)
    const unknownId = 'key_0000000000000000'
    const confirmOther = await bob.get(`/portal/keys/${aliceRow.id}/revoke`)
    const confirmUnknown = await bob.get(`/portal/keys/${unknownId}/revoke`)
    const revokeOther = await bob.post(`/portal/keys/${aliceRow.id}/revoke`, { _csrf: token })
    const revokeUnknown = await bob.post(`/portal/keys/${unknownId}/revoke`, { _csrf: token })
    for (const response of [confirmOther, confirmUnknown, revokeOther, revokeUnknown]) {
      assert.equal(response.statusCode, 404, response.body)
      assert.equal(messageOf(response.body), 'None of your keys has this id.')
    }
    assert.equal(confirmOther.body, confirmUnknown.body)
    assert.equal(revokeOther.body.replace(/Status \d+/, ''), revokeUnknown.body.replace(/Status \d+/, ''))
    assert.equal((await bob.get(`/portal/keys?revoked=${aliceRow.id}`)).body.includes('has been revoked'), false)
    assert.equal(await apiStatus(app, aliceKey), 200, "alice's key still works")
    assert.equal((await store.apiKeys.listByAccount(aliceRow.accountId))[0]?.revokedAt, null)
  })

  test('a label over 100 characters is refused with 400 and the page keeps it; labels are escaped', async (t) => {
    const { app, store } = testApp()
    const browser = new PortalClient(app)
    await browser.signedUpAs(store, 'ivan@example.com')
    const tooLong = await browser.submit('/portal/keys', '/portal/keys', { ...DEFAULT_KEY_FIELDS, label: 'x'.repeat(101) })
    assert.equal(tooLong.statusCode, 400, tooLong.body)
    assert.equal(messageOf(tooLong.body), 'The label must be at most 100 characters long.')
    assert.doesNotMatch(tooLong.body, /new-key-value/)
    const evil = '<img src=x onerror="alert(1)">'
    const { response } = await browser.generateKey(evil)
    assert.equal(response.body.includes(evil), false)
    assert.ok(response.body.includes('&lt;img src=x onerror=&quot;alert(1)&quot;&gt;'))
    assertNoInlineCode(response.body, 'the keys page with a hostile label')
  })

  test('the cap of 100 live keys holds under concurrent generations from one session', { timeout: 60_000 }, async (t) => {
    const { app, store } = testApp()
    const browser = new PortalClient(app)
    await browser.signedUpAs(store, 'cap@example.com')
    const account = await store.accounts.findByEmail('cap@example.com')
    assert.ok(account)
    for (let index = 0; index < MAX_LIVE_KEYS - 20; index++) {
      const generated = generateApiKey()
      await store.apiKeys.create({ id: newKeyId(), accountId: account.id, label: null, prefix: generated.prefix, hash: generated.hash }, { maxLive: MAX_LIVE_KEYS })
    }
    const page = await browser.get('/portal/keys')
    const token = csrfTokenOf(page.body.slice(page.body.indexOf('action="/portal/keys"')))
    const answers = await Promise.all(Array.from({ length: KEY_CHANGE_LIMIT.maxPerWindow }, async (_, index) => await browser.post('/portal/keys', { _csrf: token, ...DEFAULT_KEY_FIELDS, label: `burst ${index}` })))
    const statuses = answers.map((answer) => answer.statusCode)
    assert.equal(statuses.filter((status) => status === 303).length, 20, statuses.join(' '))
    assert.equal(statuses.filter((status) => status === 400).length, KEY_CHANGE_LIMIT.maxPerWindow - 20, statuses.join(' '))
    const refused = answers.find((answer) => answer.statusCode === 400)
    assert.equal(messageOf(refused?.body ?? ''), `You have ${MAX_LIVE_KEYS} active keys, the most an account may have (a rolled key counts until its grace period ends). Revoke one you no longer use first.`)
    assert.equal((await store.apiKeys.pageByAccount(account.id, { live: true, limit: 1, offset: 0 })).total, MAX_LIVE_KEYS)
  })

  test(`an account may generate ${KEY_CHANGE_LIMIT.maxPerWindow} keys and revoke ${KEY_CHANGE_LIMIT.maxPerWindow} per hour, in the portal and with the CLI`, { timeout: 60_000 }, async (t) => {
    const { app, store, databaseUrl } = testApp()
    const browser = new PortalClient(app)
    await browser.signedUpAs(store, 'rate@example.com')
    const account = await store.accounts.findByEmail('rate@example.com')
    assert.ok(account)
    const { key } = await browser.generateKey('kept')
    const [row] = await store.apiKeys.listByAccount(account.id)
    assert.ok(row)
    const now = new Date()
    const spend = async (change: 'generation' | 'revocation', count: number): Promise<void> => {
      for (let i = 0; i < count; i++) await store.loginAttempts.record([keyChangeSubject(change, account.id)], now, new Date(now.getTime() - KEY_CHANGE_LIMIT.windowMs))
    }
    await spend('generation', KEY_CHANGE_LIMIT.maxPerWindow - 2)
    assert.equal((await browser.generateKey('last one')).response.statusCode, 200)
    const refused = await browser.submit('/portal/keys', '/portal/keys', { ...DEFAULT_KEY_FIELDS, label: 'one too many' })
    assert.equal(refused.statusCode, 429, refused.body)
    assert.match(String(refused.headers['retry-after']), /^\d+$/)
    assert.match(messageOf(refused.body), /^The account has made 30 key generations in the last hour, the most allowed; try again in \d+ minutes?\.$/)
    assert.match(refused.body, /value="one too many"/, 'the form keeps the label')
    const env = { PATH: process.env.PATH ?? '', DATABASE_URL: databaseUrl }
    const cli = await runCli(['keys', 'create', '--email', 'rate@example.com'], env)
    assert.equal(cli.code, 1)
    assert.match(cli.stderr, /^error: the account has made 30 key generations in the last hour/)

    await spend('revocation', KEY_CHANGE_LIMIT.maxPerWindow)
    const confirm = await browser.get(`/portal/keys/${row.id}/revoke`)
    const revoke = await browser.post(`/portal/keys/${row.id}/revoke`, { _csrf: csrfTokenOf(confirm.body) })
    assert.equal(revoke.statusCode, 429, revoke.body)
    assert.match(messageOf(revoke.body), /key revocations in the last hour.*animal-store keys revoke key_/)
    assert.equal(await apiStatus(app, key), 200, 'not revoked')
    const operator = await runCli(['keys', 'revoke', row.id], env)
    assert.equal(operator.code, 0, `an operator's revocation is never held back: ${operator.stderr}`)
  })

  test('the keys page lists every live key and the 10 most recently revoked; older revoked keys are paged', { timeout: 60_000 }, async (t) => {
    const { app, store } = testApp()
    const browser = new PortalClient(app)
    await browser.signedUpAs(store, 'pages@example.com')
    const account = await store.accounts.findByEmail('pages@example.com')
    assert.ok(account)
    const ids: string[] = []
    for (let index = 0; index < 301; index++) {
      const generated = generateApiKey()
      ids.push((await store.apiKeys.create({ id: newKeyId(), accountId: account.id, label: `key ${index}`, prefix: generated.prefix, hash: generated.hash }, { maxLive: MAX_LIVE_KEYS })).id)
      if (index >= 279 && index < 290) {
        // Revocations are ordered by their time, to the millisecond: those the page must tell apart get one each.
        const before = Date.now()
        while (Date.now() === before) await new Promise((resolve) => setImmediate(resolve))
      }
      if (index < 290) assert.equal(await store.apiKeys.revoke(ids[index] ?? ''), 'revoked')
    }
    const keys = await browser.get('/portal/keys')
    assert.equal(keys.statusCode, 200)
    assert.ok(keys.body.length < 32_000, `the keys page is ${keys.body.length} bytes`)
    assert.match(keys.body, /11 active, 290 revoked or expired\./)
    assert.equal((keys.body.match(/<tr class="revoked">/g) ?? []).length, 10)
    assert.ok(keys.body.includes('>key 289<'), 'the latest revoked key is shown')
    assert.equal(keys.body.includes('>key 279<'), false)
    assert.match(keys.body, /<a href="\/portal\/keys\/revoked\?page=1">All 290 revoked or expired keys<\/a>/)

    const first = await browser.get('/portal/keys/revoked?page=1')
    assert.equal(first.statusCode, 200)
    assert.equal((first.body.match(/<tr class="revoked">/g) ?? []).length, 50)
    assert.match(first.body, /href="\/portal\/keys\/revoked\?page=2" rel="next"/)
    const last = await browser.get('/portal/keys/revoked?page=6')
    assert.equal((last.body.match(/<tr class="revoked">/g) ?? []).length, 40)
    assert.ok(last.body.includes('>key 0<'), 'the first key revoked is on the last page')
    assert.doesNotMatch(last.body, /rel="next"/)
    assert.equal((await browser.get('/portal/keys/revoked?page=7')).headers.location, '/portal/keys/revoked?page=6')
    assert.equal((await browser.get('/portal/keys/revoked?page=abc')).statusCode, 200)
    assert.equal((await new PortalClient(app).get('/portal/keys/revoked')).statusCode, 303, 'only for a session')
  })
})

describe('developer portal: control characters', () => {
  const NUL = '\u0000'

  test('an email or password with a control character gets 400 naming the field on sign-up and log-in, and nothing is stored', async (t) => {
    const { app, store } = testApp()
    await new PortalClient(app).signedUpAs(store, 'pat@example.com')
    const cases: Array<[string, Record<string, string>, RegExp]> = [
      ['/portal/signup', { email: `a${NUL}b@x.io`, password: PASSWORD }, /^The email address must not contain control characters \(it contains U\+0000\)\.$/],
      ['/portal/signup', { email: 'new@example.com', password: `${PASSWORD}\u0007` }, /^The password must not contain control characters \(it contains U\+0007\)\.$/],
      ['/portal/login', { email: `a${NUL}b@x.io`, password: PASSWORD }, /^The email address must not contain control characters \(it contains U\+0000\)\.$/],
      ['/portal/login', { email: `pat@example.com${NUL}`, password: PASSWORD }, /^The email address must not/],
      ['/portal/login', { email: 'pat@example.com', password: `${NUL}${PASSWORD}` }, /^The password must not contain control characters \(it contains U\+0000\)\.$/],
      ['/portal/login', { email: 'pat@example.com', password: `${PASSWORD}\u007f` }, /^The password must not contain control characters \(it contains U\+007F\)\.$/]
    ]
    for (const [path, fields, message] of cases) {
      const response = await new PortalClient(app).submit(path, path, fields)
      assert.equal(response.statusCode, 400, `${path} ${JSON.stringify(fields)}: ${response.body}`)
      assert.match(String(response.headers['content-type']), /^text\/html/)
      assert.match(messageOf(response.body), message, JSON.stringify(fields))
      assert.equal(response.body.includes(NUL), false, 'what was typed is shown back without its control characters')
    }
    assert.equal(await store.accounts.findByEmail('new@example.com'), undefined)
  })

  test('a key label with a control character gets 400 naming the label, and no key', async (t) => {
    const { app, store } = testApp()
    const browser = new PortalClient(app)
    await browser.signedUpAs(store, 'quinn@example.com')
    for (const label of [`lap${NUL}top`, 'tab\there', 'line\nbreak', 'del\u007f']) {
      const response = await browser.submit('/portal/keys', '/portal/keys', { ...DEFAULT_KEY_FIELDS, label })
      assert.equal(response.statusCode, 400, response.body)
      assert.match(messageOf(response.body), /^The label must not contain control characters \(it contains U\+00[0-7][0-9A-F]\)\.$/)
    }
    assert.deepEqual(await store.apiKeys.listByAccount((await store.accounts.findByEmail('quinn@example.com'))?.id ?? 0), [])
  })
})

describe('developer portal: C1 and bidirectional controls', () => {
  test('an email with a C1 or bidirectional control gets 400 naming the field and the character on sign-up and log-in, and nothing is stored', async (t) => {
    const { app, store } = testApp()
    await new PortalClient(app).signedUpAs(store, 'pam@example.com')
    const cases: Array<[string, Record<string, string>, RegExp]> = [
      ['/portal/signup', { email: 'new@example.com\u0085', password: PASSWORD }, /^The email address must not contain control characters \(it contains U\+0085\)\.$/],
      ['/portal/signup', { email: 'moc.elpmaxe@\u202ewen', password: PASSWORD }, /^The email address must not contain bidirectional formatting characters \(it contains U\+202E\)\.$/],
      ['/portal/signup', { email: 'new\u200e@example.com', password: PASSWORD }, /^The email address must not contain bidirectional formatting characters \(it contains U\+200E\)\.$/],
      ['/portal/signup', { email: 'new@example.com', password: `${PASSWORD}\u009b` }, /^The password must not contain control characters \(it contains U\+009B\)\.$/],
      ['/portal/login', { email: 'pam@example.com\u2066', password: PASSWORD }, /^The email address must not contain bidirectional formatting characters \(it contains U\+2066\)\.$/],
      ['/portal/login', { email: 'pam@example.com', password: `\u0085${PASSWORD}` }, /^The password must not contain control characters \(it contains U\+0085\)\.$/]
    ]
    for (const [path, fields, message] of cases) {
      const response = await new PortalClient(app).submit(path, path, fields)
      assert.equal(response.statusCode, 400, `${path} ${JSON.stringify(fields)}: ${response.body}`)
      assert.match(messageOf(response.body), message, JSON.stringify(fields))
      assert.equal(/[\u0085\u009b\u200e\u202e\u2066]/.test(response.body), false, 'what was typed is shown back without the refused characters')
    }
    assert.equal(await store.accounts.findByEmail('new@example.com'), undefined)
    assert.equal(await store.accounts.findByEmail('new\u200e@example.com'), undefined)
  })

  test('a key label with a C1 or bidirectional control gets 400 naming the label, and no key', async (t) => {
    const { app, store } = testApp()
    const browser = new PortalClient(app)
    await browser.signedUpAs(store, 'rtl@example.com')
    const labels: Array<[string, string]> = [['lap\u0085top', '0085'], ['prod\u202eved', '202E'], ['\u2067staging', '2067'], ['ci\u200f', '200F'], ['\u061cci', '061C']]
    for (const [label, code] of labels) {
      const response = await browser.submit('/portal/keys', '/portal/keys', { ...DEFAULT_KEY_FIELDS, label })
      assert.equal(response.statusCode, 400, response.body)
      assert.match(messageOf(response.body), new RegExp(`^The label must not contain (control|bidirectional formatting) characters \\(it contains U\\+${code}\\)\\.$`))
    }
    assert.deepEqual(await store.apiKeys.listByAccount((await store.accounts.findByEmail('rtl@example.com'))?.id ?? 0), [])
  })
})

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
    const { app, store } = await buildTestApp(t)
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

describe('developer portal: surface', () => {
  test('every portal page carries the CSP, X-Frame-Options, Referrer-Policy and Cache-Control: no-store, and has no inline code', async (t) => {
    const { app, store } = testApp()
    const browser = new PortalClient(app)
    const pages: Array<[string, { statusCode: number, headers: Record<string, unknown>, body: string }]> = []
    pages.push(['log-in', await browser.get('/portal/login')])
    pages.push(['sign-up', await browser.get('/portal/signup')])
    pages.push(['sign-up 400', await browser.submit('/portal/signup', '/portal/signup', { email: 'x@example.com', password: 'short' })])
    pages.push(['sign-up 403', await browser.post('/portal/signup', { email: 'x@example.com', password: PASSWORD })])
    await new PortalClient(app).signedUpAs(store, 'nina@example.com')
    pages.push(['redirect', await browser.logIn('nina@example.com', PASSWORD)])
    pages.push(['keys', await browser.get('/portal/keys')])
    const created = await browser.generateKey('headers')
    pages.push(['new key', created.response])
    const [row] = await store.apiKeys.listByAccount((await store.accounts.findByEmail('nina@example.com'))?.id ?? 0)
    pages.push(['revoke confirmation', await browser.get(`/portal/keys/${row?.id ?? ''}/revoke`)])
    pages.push(['roll confirmation', await browser.get(`/portal/keys/${row?.id ?? ''}/roll`)])
    pages.push(['key page', await browser.get(`/portal/keys/${row?.id ?? ''}`)])
    pages.push(['events', await browser.get('/portal/events')])
    pages.push(['ended keys', await browser.get('/portal/keys/revoked')])
    pages.push(['key 404', await browser.get('/portal/keys/key_0000000000000000')])
    pages.push(['keys 403', await browser.post('/portal/keys', { label: 'x' })])
    pages.push(['not found', await browser.get('/portal/nope')])
    for (const [name, response] of pages) {
      assertPortalHeaders(response, name)
      if (response.statusCode !== 303) {
        assert.match(String(response.headers['content-type']), /^text\/html; charset=utf-8$/, name)
        assertNoInlineCode(response.body, name)
        assert.match(response.body, /<link rel="stylesheet" href="\/portal\/assets\/portal\.css\?v=/, name)
      }
    }
    const css = await app.inject({ url: '/portal/assets/portal.css' })
    assert.equal(css.statusCode, 200)
    assert.match(String(css.headers['content-type']), /^text\/css/)
    assert.match(css.body, /:focus-visible/)
    const script = await app.inject({ url: '/portal/assets/copy.js' })
    assert.equal(script.statusCode, 200)
    assert.match(String(script.headers['content-type']), /^text\/javascript/)
    assert.match(script.body, /navigator\.clipboard\.writeText/)
  })

  test('portal errors are HTML pages, the API keeps its JSON errors and its strict body parsing, and the portal is not in the OpenAPI document', async (t) => {
    const { app, auth } = testApp()
    const missing = await app.inject({ url: '/portal/no/such/page' })
    assert.equal(missing.statusCode, 404)
    assert.match(String(missing.headers['content-type']), /^text\/html/)
    assert.match(missing.body, /Page not found/)
    const tooLarge = await app.inject({ method: 'POST', url: '/portal/login', headers: { 'content-type': 'application/x-www-form-urlencoded' }, payload: `email=${'a'.repeat(20_000)}` })
    assert.equal(tooLarge.statusCode, 413)
    assert.match(String(tooLarge.headers['content-type']), /^text\/html/)

    const form = await app.inject({ method: 'POST', url: '/v1/pets', headers: { ...auth, 'content-type': 'application/x-www-form-urlencoded' }, payload: 'name=Rex&categoryId=1' })
    assert.equal(form.statusCode, 415, form.body)
    assert.equal(form.json<{ code: string }>().code, 'unsupported_media_type')
    const apiMissing = await app.inject({ url: '/v1/nope', headers: auth })
    assert.equal(apiMissing.json<{ code: string }>().code, 'not_found')
    assert.equal((await app.inject({ url: '/v1/pets', headers: { cookie: 'portal_session=x' } })).statusCode, 401, 'a portal cookie is no API credential')

    const doc = (await app.inject({ url: '/v1/openapi.json' })).json<{ paths: Record<string, unknown> }>()
    assert.deepEqual(Object.keys(doc.paths).filter((path) => path.includes('portal')), [])
  })

  test('a /portal request the framework cannot read gets an HTML error page with its 4xx, never the API JSON: unsupported or encoded bodies, oversized forms, overlong paths', { timeout: 30_000 }, async (t) => {
    const server = await startServer(t)
    const cases: Array<{ name: string, method?: string, path?: string, headers?: Record<string, string>, body?: string, status: number, title: RegExp }> = [
      { name: 'text/plain', headers: { 'content-type': 'text/plain' }, body: 'email=a@b.io', status: 415, title: /Not a form/ },
      { name: 'JSON', headers: { 'content-type': 'application/json' }, body: '{"email":"a@b.io"}', status: 415, title: /Not a form/ },
      { name: 'malformed JSON', headers: { 'content-type': 'application/json' }, body: '{"email":', status: 415, title: /Not a form/ },
      { name: 'multipart', headers: { 'content-type': 'multipart/form-data; boundary=x' }, body: '--x--', status: 415, title: /Not a form/ },
      { name: 'a garbage content type', headers: { 'content-type': ';;;' }, body: 'a=b', status: 415, title: /Not a form/ },
      { name: 'a gzip-encoded form', headers: { 'content-type': 'application/x-www-form-urlencoded', 'content-encoding': 'gzip' }, body: 'a=b', status: 415, title: /Not a form/ },
      { name: 'an oversized form', headers: { 'content-type': 'application/x-www-form-urlencoded' }, body: `email=${'a'.repeat(20_000)}`, status: 413, title: /Form too large/ },
      { name: 'a path segment beyond the router\'s limit', method: 'GET', path: `/portal/keys/${'k'.repeat(3000)}/revoke`, status: 404, title: /Page not found/ },
      { name: 'a malformed escape in the path', method: 'GET', path: '/portal/%E0%A4%A', status: 404, title: /Page not found/ }
    ]
    for (const item of cases) {
      const response = await fetch(`${server.baseUrl}${item.path ?? '/portal/login'}`, { method: item.method ?? 'POST', headers: item.headers, body: item.body })
      const text = await response.text()
      assert.equal(response.status, item.status, `${item.name}: ${text.slice(0, 300)}`)
      assert.match(response.headers.get('content-type') ?? '', /^text\/html; charset=utf-8$/, item.name)
      assert.equal(response.headers.get('content-security-policy'), CSP, item.name)
      assert.match(text, item.title, item.name)
      assert.doesNotMatch(text, /"code"/, item.name)
    }

    // A declared Content-Length over the form limit is refused before any of the body is read.
    const declared = await new Promise<{ status: number, type: string }>((resolve, reject) => {
      const outgoing = httpRequest(`${server.baseUrl}/portal/login`, { method: 'POST', headers: { 'content-type': 'application/x-www-form-urlencoded', 'content-length': '1000000' } }, (response) => {
        response.resume()
        resolve({ status: response.statusCode ?? 0, type: String(response.headers['content-type']) })
        outgoing.destroy()
      })
      outgoing.on('error', (error) => { if (!outgoing.destroyed) reject(error) })
      outgoing.flushHeaders()
    })
    assert.deepEqual(declared, { status: 413, type: 'text/html; charset=utf-8' })
  })

  test('no password, API key or session token appears in the logs (even at trace level) or in the SQLite files', async (t) => {
    const { store, dbPath } = await openTestStore(t)
    const lines: string[] = []
    const sink = new Writable({ write (chunk: Buffer, _encoding, done) { lines.push(chunk.toString('utf8')); done() } })
    const config = loadConfig({ ...TEST_DEFAULTS, LOG_LEVEL: 'trace' })
    const app = await buildServedApp({ config, store, logger: pino({ ...loggerOptions(config), level: 'trace' }, sink) })
    t.after(() => app.close())
    const browser = new PortalClient(app)
    await browser.signUp('olga@example.com', PASSWORD)
    const session = browser.cookies.get('portal_session') ?? ''
    const { key } = await browser.generateKey('logged?')
    await apiStatus(app, key)
    await new PortalClient(app).logIn('olga@example.com', 'a wrong password typed here')
    await new PortalClient(app).logIn('olga@example.com', PASSWORD)
    const logs = lines.join('')
    assert.match(logs, /portal: API key generated/, 'the portal logs what it does')
    for (const secret of [PASSWORD, 'a wrong password typed here', key, key.slice(12), session]) {
      assert.equal(logs.includes(secret), false, `${secret.slice(0, 6)}… is in the logs`)
    }
    if (dbPath === '') return // PostgreSQL: test/process/secrets-at-rest.test.ts greps a dump.
    const files = [dbPath, `${dbPath}-wal`].filter((path) => existsSync(path)).map((path) => readFileSync(path).toString('latin1')).join('')
    assert.match(files, /olga@example\.com/, 'the search works: the account is in the files')
    for (const secret of [PASSWORD, 'a wrong password typed here', key.slice(12), session]) {
      assert.equal(files.includes(secret), false, `${secret.slice(0, 6)}… is in the database files`)
    }
  })
})

describe('developer portal: accounts made by the CLI', () => {
  test('cannot log in until an operator sets a password with accounts set-password (read from stdin), which also ends their sessions', { timeout: 60_000 }, async (t) => {
    const { app, store, databaseUrl } = testApp()
    const env = { PATH: process.env.PATH ?? '', DATABASE_URL: databaseUrl }
    assert.equal((await runCli(['accounts', 'create', '--email', 'ops@example.com'], env)).code, 0)
    assert.equal((await new PortalClient(app).logIn('ops@example.com', PASSWORD)).statusCode, 401)

    const setPassword = async (password: string): Promise<{ code: number | null, stdout: string, stderr: string }> => {
      const child = spawn(process.execPath, [CLI_PATH, 'accounts', 'set-password', '--email', 'ops@example.com'], { env, stdio: ['pipe', 'pipe', 'pipe'] })
      let stdout = ''
      let stderr = ''
      child.stdout.setEncoding('utf8').on('data', (chunk: string) => { stdout += chunk })
      child.stderr.setEncoding('utf8').on('data', (chunk: string) => { stderr += chunk })
      child.stdin.end(`${password}\n`)
      const [code] = await once(child, 'close') as [number | null]
      return { code, stdout, stderr }
    }
    const short = await setPassword('too short')
    assert.equal(short.code, 1)
    assert.match(short.stderr, /at least 12 characters/)

    const set = await setPassword(PASSWORD)
    assert.equal(set.code, 0, set.stderr)
    assert.match(set.stdout, /Set the portal password of ops@example\.com/)
    assert.equal(set.stdout.includes(PASSWORD) || set.stderr.includes(PASSWORD), false)
    const browser = new PortalClient(app)
    assert.equal((await browser.logIn('ops@example.com', PASSWORD)).statusCode, 303)
    assert.equal((await browser.get('/portal/keys')).statusCode, 200)

    const reset = await setPassword('a brand new password')
    assert.equal(reset.code, 0, reset.stderr)
    assert.match(reset.stdout, /ended 1 portal session/)
    assert.equal((await browser.get('/portal/keys')).statusCode, 303, 'the session ended with the password change')
    assert.equal((await store.accounts.findCredentials('ops@example.com'))?.passwordHash?.startsWith('$scrypt$'), true)
  })
})
