// The developer portal: sign-up, log-in, sessions and CSRF (its keys and pages: portal-pages.test.ts; throttling: portal-throttling.test.ts).
import { spawn } from 'node:child_process'
import { once } from 'node:events'
import { describe, test } from 'node:test'
import assert from 'node:assert/strict'
import { hashSessionToken } from '../../src/core/sessions.js'
import { createAccount } from '../../src/services/accounts.js'
import { buildTestApp, suiteTestApp } from '../helpers/build-app.js'
import { eventually } from '../helpers/eventually.js'
import { DEFAULT_HASH_COST_ENV, TEST_HASH_COST_ENV } from '../helpers/password-cost.js'
import { accountWithTestPassword, csrfTokenOf, DEFAULT_KEY_FIELDS, messageOf, PortalClient, TEST_PASSWORD } from '../helpers/portal-client.js'
import { CLI_PATH, runCli } from '../helpers/spawn-cli.js'
import { apiStatus, secondInstance, withoutEmail } from '../helpers/portal-app.js'

const PASSWORD = TEST_PASSWORD

/**
 * The app most tests share: each keeps to emails of its own. Tests that look at the whole outbox, throttle
 * addresses or emails, or need a logger or configuration of their own build their own app.
 */
const testApp = suiteTestApp()

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

  test('sign-up creates an account with an scrypt hash at PASSWORD_HASH_COST, logs it in and shows its (empty) keys page', async (t) => {
    const { app, store } = testApp()
    const browser = new PortalClient(app)
    const signedUp = await browser.signUp(' New.User@Example.com ', PASSWORD)
    assert.equal(signedUp.statusCode, 303, signedUp.body)
    assert.equal(signedUp.headers.location, '/portal/keys')
    const credentials = await store.accounts.findCredentials('new.user@example.com')
    assert.ok(credentials, 'the account exists under the normalised email')
    assert.match(credentials.passwordHash ?? '', new RegExp(`^\\$scrypt\\$ln=${TEST_HASH_COST_ENV.PASSWORD_HASH_COST},r=8,p=1\\$[A-Za-z0-9+/]{22}\\$[A-Za-z0-9+/]{43}$`))
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

  test('wrong password, unknown email and an account without a password get the same 401 page, for the same hashing work', async (t) => {
    // At the default cost: at the tests' own, a hash costs about as much as the rest of a log-in, and the costs would tell nothing.
    const { app, store } = await buildTestApp(t, DEFAULT_HASH_COST_ENV)
    await new PortalClient(app).signedUpAs(store, 'amy@example.com')
    await createAccount(store, { email: 'no-password@example.com' })
    // The process's CPU time, which counts scrypt's work on the thread pool: wall time on a busy machine
    // is mostly the wait for a core, which varies from one attempt to the next.
    const attempt = async (email: string, password: string): Promise<{ status: number, body: string, cpuMs: number }> => {
      const browser = new PortalClient(app)
      const page = await browser.get('/portal/login')
      const started = process.cpuUsage()
      const response = await browser.post('/portal/login', { _csrf: csrfTokenOf(page.body), email, password })
      const { user, system } = process.cpuUsage(started)
      return { status: response.statusCode, body: withoutEmail(response.body.replace(csrfTokenOf(response.body), 'TOKEN'), email), cpuMs: (user + system) / 1000 }
    }
    const wrong = [await attempt('amy@example.com', 'not the password'), await attempt('amy@example.com', 'not the password either')]
    const unknown = [await attempt('nobody@example.com', PASSWORD), await attempt('nobody-else@example.com', PASSWORD)]
    const passwordless = await attempt('no-password@example.com', PASSWORD)
    for (const answer of [...wrong, ...unknown, passwordless]) {
      assert.equal(answer.status, 401, answer.body)
      assert.equal(answer.body, wrong[0]?.body)
    }
    assert.equal(messageOf(wrong[0]?.body ?? ''), 'The email address or the password is not correct.')
    // An unknown email is checked against a dummy scrypt hash: it costs a hash's CPU time, not a lookup's few milliseconds.
    const cheapest = (answers: Array<{ cpuMs: number }>): number => Math.min(...answers.map((answer) => answer.cpuMs))
    assert.ok(cheapest(unknown) > cheapest(wrong) / 3, `unknown email ${cheapest(unknown)} ms of CPU vs wrong password ${cheapest(wrong)} ms`)
    assert.ok(passwordless.cpuMs > cheapest(wrong) / 3, `account without password ${passwordless.cpuMs} ms of CPU vs wrong password ${cheapest(wrong)} ms`)
  })

  test('a log-in remakes a password hash made at another cost at PASSWORD_HASH_COST; the password still logs in', async (t) => {
    const { app, store } = await buildTestApp(t, { PASSWORD_HASH_COST: '13' })
    const accountId = await accountWithTestPassword(store, 'raised@example.com', 12)
    const before = (await store.accounts.findCredentials('raised@example.com'))?.passwordHash ?? ''
    assert.match(before, /^\$scrypt\$ln=12,r=8,p=1\$/)
    assert.equal((await new PortalClient(app).logIn('raised@example.com', 'not the password')).statusCode, 401)
    assert.equal((await store.accounts.findCredentials('raised@example.com'))?.passwordHash, before, 'a wrong password remakes nothing')
    assert.equal((await new PortalClient(app).logIn('raised@example.com', PASSWORD)).statusCode, 303)
    const after = await store.accounts.findCredentials('raised@example.com')
    assert.equal(after?.accountId, accountId)
    assert.match(after?.passwordHash ?? '', /^\$scrypt\$ln=13,r=8,p=1\$[A-Za-z0-9+/]{22}\$[A-Za-z0-9+/]{43}$/)
    assert.equal((await new PortalClient(app).logIn('raised@example.com', PASSWORD)).statusCode, 303, 'the remade hash checks the same password')
    assert.equal((await store.accounts.findCredentials('raised@example.com'))?.passwordHash, after?.passwordHash, 'a hash at the configured cost is kept')
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

describe('developer portal: accounts made by the CLI', () => {
  test('cannot log in until an operator sets a password with accounts set-password (read from stdin), which also ends their sessions', { timeout: 60_000 }, async (t) => {
    const { app, store, databaseUrl } = testApp()
    const env = { PATH: process.env.PATH ?? '', DATABASE_URL: databaseUrl, ...TEST_HASH_COST_ENV }
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
    assert.equal((await store.accounts.findCredentials('ops@example.com'))?.passwordHash?.startsWith(`$scrypt$ln=${TEST_HASH_COST_ENV.PASSWORD_HASH_COST},`), true, 'hashed at PASSWORD_HASH_COST')
  })
})
