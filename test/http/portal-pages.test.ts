// The developer portal: keys, refused characters, and what every page carries (sign-up and log-in: portal.test.ts).
import { existsSync, readFileSync } from 'node:fs'
import { request as httpRequest } from 'node:http'
import { Writable } from 'node:stream'
import { describe, test } from 'node:test'
import assert from 'node:assert/strict'
import { pino } from 'pino'
import { loggerOptions } from '../../src/app.js'
import { loadConfig } from '../../src/config.js'
import { generateApiKey, KEY_CHANGE_LIMIT, keyChangeSubject, MAX_LIVE_KEYS, newKeyId } from '../../src/core/api-keys.js'
import { buildServedApp, openTestStore, suiteTestApp, TEST_DEFAULTS } from '../helpers/build-app.js'
import { assertNoInlineCode, assertPortalHeaders, CSP, csrfTokenOf, DEFAULT_KEY_FIELDS, messageOf, PortalClient, TEST_PASSWORD } from '../helpers/portal-client.js'
import { startServer } from '../helpers/start-server.js'
import { runCli } from '../helpers/spawn-cli.js'
import { apiStatus, msUntilRefused, secondInstance, snippetOf } from '../helpers/portal-app.js'

const PASSWORD = TEST_PASSWORD

/**
 * The app most tests share: each keeps to emails of its own. Tests that look at the whole outbox, throttle
 * addresses or emails, or need a logger or configuration of their own build their own app.
 */
const testApp = suiteTestApp()

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
