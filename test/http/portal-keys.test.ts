import { describe, test } from 'node:test'
import assert from 'node:assert/strict'
import type { FastifyInstance, LightMyRequestResponse } from 'fastify'
import { pino } from 'pino'
import { loadConfig } from '../../src/config.js'
import { generateApiKey, KEY_CHANGE_LIMIT, keyChangeSubject, MAX_LIVE_KEYS, newKeyId } from '../../src/core/api-keys.js'
import { appendAuditEvent } from '../../src/services/audit-trail.js'
import type { ApiKeyRow, Store } from '../../src/storage/store.js'
import { buildServedApp, suiteTestApp, TEST_DEFAULTS } from '../helpers/build-app.js'
import { assertNoInlineCode, assertPortalHeaders, csrfTokenOf, DEFAULT_KEY_FIELDS, messageOf, PortalClient, TEST_PASSWORD } from '../helpers/portal-client.js'
import { apiStatus, msUntilRefused } from '../helpers/portal-app.js'

const PASSWORD = TEST_PASSWORD

/* The portal's keys beyond generating and revoking them (portal-pages.test.ts); sign-up, log-in and CSRF: portal.test.ts. */

describe('developer portal: scopes, expiry, rolling, usage and events', { concurrency: 4 }, () => {
  const DAY_MS = 86_400_000
  // Each test keeps to accounts of its own.
  const testApp = suiteTestApp()

  async function accountIdOf (store: Store, email: string): Promise<number> {
    const account = await store.accounts.findByEmail(email)
    assert.ok(account, email)
    return account.id
  }

  async function onlyKey (store: Store, email: string, label: string): Promise<ApiKeyRow> {
    const row = (await store.apiKeys.listByAccount(await accountIdOf(store, email))).find((key) => key.label === label)
    assert.ok(row, label)
    return row
  }

  /** Opens the roll confirmation of the key and posts it with the grace period. */
  async function roll (browser: PortalClient, keyId: string, grace: string | undefined): Promise<LightMyRequestResponse> {
    const confirm = await browser.get(`/portal/keys/${keyId}/roll`)
    assert.equal(confirm.statusCode, 200, confirm.body)
    return browser.post(`/portal/keys/${keyId}/roll`, { _csrf: csrfTokenOf(confirm.body), ...(grace === undefined ? {} : { grace }) })
  }

  async function createPet (app: FastifyInstance, key: string): Promise<LightMyRequestResponse> {
    return app.inject({ method: 'POST', url: '/v1/pets', headers: { authorization: `Bearer ${key}`, 'content-type': 'application/json' }, payload: JSON.stringify({ name: 'Rex', categoryId: 1, status: 'available' }) })
  }

  /** The data-event attributes of the events page's rows, in order. */
  const eventsOf = (body: string): string[] => [...body.matchAll(/<tr data-event="([a-z_]+)">/g)].map((match) => match[1] ?? '')

  test('a key made read-only in the portal lists animals but gets 403 insufficient_scope on createPet; its scopes and expiry are shown', async () => {
    const { app, store } = testApp()
    const browser = new PortalClient(app)
    await browser.signedUpAs(store, 'reader@example.com')
    const before = Date.now()
    const { response, key } = await browser.generateKey('dashboard', { scopes: ['animals:read'], expires_in: '30d' })
    assert.equal(response.headers['cache-control'], 'no-store')
    const terms = /<dl class="terms" id="new-key-terms">([\s\S]*?)<\/dl>/.exec(response.body)?.[1] ?? ''
    assert.match(terms, /<dt>Scopes<\/dt><dd><span class="scopes"><code>animals:read<\/code><\/span><\/dd>/)
    assert.match(terms, /<dt>Expiry<\/dt><dd>Expires <time datetime="[^"]+">\d{4}-\d{2}-\d{2}<\/time> \(in 30 days\)<\/dd>/)

    const row = await onlyKey(store, 'reader@example.com', 'dashboard')
    assert.deepEqual(row.scopes, ['animals:read'])
    const expiresIn = (row.expiresAt?.getTime() ?? 0) - before
    assert.ok(expiresIn >= 30 * DAY_MS && expiresIn < 30 * DAY_MS + 60_000, `expires in ${expiresIn} ms`)

    assert.equal(await apiStatus(app, key), 200, 'it reads')
    const write = await createPet(app, key)
    assert.equal(write.statusCode, 403, write.body)
    assert.equal((write.json() as { code: string }).code, 'insufficient_scope')

    const keys = await browser.get('/portal/keys')
    assert.match(keys.body, /<td data-label="Scopes"><span class="scopes"><code>animals:read<\/code><\/span><\/td>/)
    assert.match(keys.body, /<td data-label="Expiry">Expires <time datetime="[^"]+">\d{4}-\d{2}-\d{2}<\/time> \(in 30 days\)<\/td>/)
    assert.doesNotMatch(keys.body, /Expires soon/, 'thirty days away is not soon')
  })

  test('the create form needs at least one scope, names an unknown one, and offers never, 7, 30, 90 days and a year', async () => {
    const { app, store } = testApp()
    const browser = new PortalClient(app)
    await browser.signedUpAs(store, 'form@example.com')
    const form = await browser.get('/portal/keys')
    assert.match(form.body, /<input type="checkbox" id="scope-animals-read" name="scopes" value="animals:read" checked>/)
    assert.match(form.body, /<input type="checkbox" id="scope-animals-write" name="scopes" value="animals:write" checked>/)
    assert.match(form.body, /<legend>Scopes<\/legend>/)
    assert.deepEqual([...form.body.matchAll(/<option value="([^"]+)"( selected)?>/g)].map((match) => match[1] + (match[2] ?? '')), ['never selected', '7d', '30d', '90d', '365d'])

    const none = await browser.submit('/portal/keys', '/portal/keys', { label: 'nothing', expires_in: '90d' })
    assert.equal(none.statusCode, 400, none.body)
    assert.equal(messageOf(none.body), 'Choose at least one scope: animals:read to list and read animals, animals:write to add them.')
    assert.match(none.body, /value="nothing"/, 'the label is kept')
    assert.match(none.body, /name="scopes" value="animals:read">/, 'the boxes are shown as they were sent: unchecked')
    assert.match(none.body, /<option value="90d" selected>/, 'the expiry is kept')
    const unknown = await browser.submit('/portal/keys', '/portal/keys', { label: 'x', scopes: ['animals:read', 'animals:delete'] })
    assert.equal(unknown.statusCode, 400, unknown.body)
    assert.match(messageOf(unknown.body), /^Unknown scope &quot;animals:delete&quot;: the scopes are animals:read, animals:write\.$/)
    const badExpiry = await browser.submit('/portal/keys', '/portal/keys', { ...DEFAULT_KEY_FIELDS, label: 'x', expires_in: 'forever' })
    assert.equal(badExpiry.statusCode, 400, badExpiry.body)
    assert.equal(messageOf(badExpiry.body), 'Choose when the key expires from the list the form offers: Never, In 7 days, In 30 days, In 90 days, In 1 year.')
    assert.deepEqual(await store.apiKeys.listByAccount(await accountIdOf(store, 'form@example.com')), [], 'no key was made')

    for (const [choice, days] of [['never', undefined], ['7d', 7], ['90d', 90], ['365d', 365]] as const) {
      const before = Date.now()
      await browser.generateKey(`expiry ${choice}`, { expires_in: choice })
      const row = await onlyKey(store, 'form@example.com', `expiry ${choice}`)
      assert.deepEqual(row.scopes, ['animals:read', 'animals:write'])
      if (days === undefined) assert.equal(row.expiresAt, null)
      else assert.ok(Math.abs((row.expiresAt?.getTime() ?? 0) - before - days * DAY_MS) < 60_000, `${choice}: ${row.expiresAt?.toISOString() ?? ''}`)
    }
  })

  test('the keys list warns of a key expiring within 7 days, and the ended keys say Revoked or Expired', async () => {
    const { app, store } = testApp()
    const browser = new PortalClient(app)
    await browser.signedUpAs(store, 'expiry@example.com')
    const accountId = await accountIdOf(store, 'expiry@example.com')
    const make = async (label: string, expiresAt: Date | null): Promise<ApiKeyRow> => {
      const generated = generateApiKey()
      return store.apiKeys.create({ id: newKeyId(), accountId, label, prefix: generated.prefix, hash: generated.hash, scopes: ['animals:read'], expiresAt }, { maxLive: MAX_LIVE_KEYS })
    }
    await make('soon', new Date(Date.now() + 3 * DAY_MS + 3_600_000))
    await make('later', new Date(Date.now() + 20 * DAY_MS + 3_600_000))
    await make('lapsed', new Date(Date.now() - DAY_MS))
    const revoked = await make('withdrawn', new Date(Date.now() + 20 * DAY_MS))
    assert.equal(await store.apiKeys.revoke(revoked.id), 'revoked')

    const page = await browser.get('/portal/keys')
    assert.equal(page.statusCode, 200, page.body)
    const row = (label: string): string => {
      const found = page.body.split('<tr').find((part) => part.includes(`>${label}</a>`))
      assert.ok(found, label)
      return found
    }
    assert.match(row('soon'), /^ class="expiring">/)
    assert.match(row('soon'), /<strong class="expiry-warning">Expires soon:<\/strong> Expires <time datetime="[^"]+">\d{4}-\d{2}-\d{2}<\/time> \(in 3 days\)/)
    assert.match(page.body, /<p class="message warning" id="expiry-warning">The key &ldquo;soon&rdquo; expires\s+within 7 days\. Roll it/)
    assert.doesNotMatch(row('later'), /Expires soon|expiring/)
    assert.match(row('later'), /\(in 20 days\)/)
    assert.match(page.body, /2 active, 2 revoked or expired\./)
    assert.match(row('lapsed'), /^ class="revoked">/)
    assert.match(row('lapsed'), /<td data-label="Status">Expired <time/)
    assert.match(row('withdrawn'), /<td data-label="Status">Revoked <time/)
    assert.doesNotMatch(row('lapsed'), /Roll|Revoke/, 'an ended key has no actions')

    const ended = await browser.get('/portal/keys/revoked')
    assert.equal(ended.statusCode, 200)
    assert.match(ended.body, /<h1>Revoked and expired keys<\/h1>/)
    assert.match(ended.body, /<td data-label="Status">Expired <time[^]*<td data-label="Status">Revoked <time|<td data-label="Status">Revoked <time[^]*<td data-label="Status">Expired <time/)
  })

  test('rolling asks for confirmation, then shows the new key once (201, no-store) with the same label and scopes; the old key works until its grace ends', async () => {
    const { app, store } = testApp()
    const browser = new PortalClient(app)
    await browser.signedUpAs(store, 'roller@example.com')
    const { key: oldKey } = await browser.generateKey('ci', { scopes: ['animals:read'], expires_in: '30d' })
    const old = await onlyKey(store, 'roller@example.com', 'ci')

    const keys = await browser.get('/portal/keys')
    assert.match(keys.body, new RegExp(`<a href="/portal/keys/${old.id}/roll" aria-label="Roll the key ci">Roll&hellip;</a>`))
    const confirm = await browser.get(`/portal/keys/${old.id}/roll`)
    assert.equal(confirm.statusCode, 200, confirm.body)
    assert.match(confirm.body, /new key with the same label and scopes/)
    assert.match(confirm.body, /keeps working for the grace period you choose/)
    const graceSelect = confirm.body.slice(confirm.body.indexOf('<select id="grace"'), confirm.body.indexOf('</select>', confirm.body.indexOf('<select id="grace"')))
    assert.deepEqual([...graceSelect.matchAll(/<option value="([^"]+)"( selected)?>/g)].map((match) => match[1] + (match[2] ?? '')), ['0', '1h', '24h selected', '7d'])
    assert.match(confirm.body, /<select id="mode" name="mode">\s*<option value="live" selected>/, 'a live key is rolled into a live key unless told')
    assertNoInlineCode(confirm.body, 'the roll confirmation')

    const before = Date.now()
    const { response: rolled, key: newKey } = await browser.showNewKey(await browser.post(`/portal/keys/${old.id}/roll`, { _csrf: csrfTokenOf(confirm.body), grace: '1h' }))
    assert.equal(rolled.headers['cache-control'], 'no-store')
    assert.notEqual(newKey, oldKey)
    assert.match(messageOf(rolled.body), /^The key ci was rolled: it keeps working until \d{4}-\d{2}-\d{2} \d{2}:\d{2} UTC, then the API refuses it\./)
    assert.match(rolled.body, /<h2 id="new-key-heading">Your new key &ldquo;ci&rdquo;<\/h2>/)
    assert.match(rolled.body, /<dt>Replaces<\/dt><dd><code>ask_[0-9A-Za-z]{8}&hellip;<\/code>, which keeps working until <time[^>]*><span>[^<]+<\/span> <span>[^<]+<\/span><\/time> \(in 1 hour\)<\/dd>/)

    const [oldAfter, successor] = [await store.apiKeys.findById(old.id), (await store.apiKeys.listByAccount(old.accountId)).find((key) => key.id !== old.id)]
    assert.ok(oldAfter && successor)
    assert.equal(oldAfter.rolledTo, successor.id)
    assert.deepEqual(successor.scopes, ['animals:read'])
    assert.equal(successor.label, 'ci')
    assert.ok(Math.abs((oldAfter.expiresAt?.getTime() ?? 0) - before - 3_600_000) < 60_000, 'the old key ends after the grace period')
    assert.equal(await apiStatus(app, oldKey), 200, 'the old key still works in its grace period')
    assert.equal(await apiStatus(app, newKey), 200, 'the new key works at once')

    const list = await browser.get('/portal/keys')
    const oldRow = list.body.split('<tr').find((part) => part.includes(`<td data-label="Label"><a href="/portal/keys/${old.id}"`)) ?? ''
    assert.doesNotMatch(oldRow, /Expires soon|expiring/, 'a rolled key ending is no surprise to warn of')
    assert.match(oldRow, new RegExp(`<span class="rolled">Rolled: replaced by <a href="/portal/keys/${successor.id}">ci <code>${successor.prefix}&hellip;</code></a>; stops working <time[^>]*><span>[^<]+</span> <span>[^<]+</span></time> \\(in (59 minutes|1 hour)\\)</span>`))
    assert.doesNotMatch(oldRow, /Roll&hellip;/, 'a rolled key is not rolled again')
    assert.match(oldRow, /Revoke&hellip;/, 'but it can be revoked before its grace ends')
    const again = await browser.get(`/portal/keys/${old.id}/roll`)
    assert.equal(again.statusCode, 409, again.body)
    assert.match(messageOf(again.body), /has been rolled already.*Roll the key that replaced it instead/)

    // Grace 0: the key is refused at once, and listed as expired, rolled.
    const { response: now, key: third } = await browser.showNewKey(await roll(browser, successor.id, '0'))
    assert.match(messageOf(now.body), /^The key ci was rolled: the API refuses it from now on\.$/)
    await msUntilRefused(app, newKey, performance.now())
    assert.equal(await apiStatus(app, third), 200)
    const ended = (await browser.get('/portal/keys')).body.split('<tr').find((part) => part.includes(`<td data-label="Label"><a href="/portal/keys/${successor.id}"`)) ?? ''
    assert.match(ended, /<td data-label="Status">Expired <time[^>]*><span>[^<]+<\/span> <span>[^<]+<\/span><\/time>, rolled: replaced by <a href="\/portal\/keys\/key_[0-9A-Za-z]{16}">ci <code>ask_[0-9A-Za-z]{8}&hellip;<\/code><\/a><\/td>/)
    const endedRoll = await browser.get(`/portal/keys/${successor.id}/roll`)
    assert.equal(endedRoll.statusCode, 409, endedRoll.body)
    assert.match(messageOf(endedRoll.body), /has expired: there is nothing to roll/)
  })

  test('generating and rolling redirect to the page that shows the secret once: reloading it posts nothing, shows no secret and says why', async () => {
    const { app, store } = testApp()
    const browser = new PortalClient(app)
    await browser.signedUpAs(store, 'reload@example.com')
    const accountId = await accountIdOf(store, 'reload@example.com')
    const posted = await browser.submit('/portal/keys', '/portal/keys', { ...DEFAULT_KEY_FIELDS, label: 'laptop' })
    const cookie = [posted.headers['set-cookie']].flat().find((line) => String(line).startsWith('portal_new_key=')) ?? ''
    assert.match(cookie, /^portal_new_key=[A-Za-z0-9_-]+; Max-Age=300; Path=\/portal; HttpOnly; SameSite=Lax$/)
    const sealed = browser.cookies.get('portal_new_key') ?? ''
    const { response: shown, key } = await browser.showNewKey(posted)
    assert.equal(shown.headers['cache-control'], 'no-store')
    assert.equal(sealed.includes(key) || Buffer.from(sealed, 'base64url').includes(key), false, 'the cookie does not carry the secret in clear')
    assert.equal(browser.cookies.has('portal_new_key'), false, 'the page that shows the secret clears the cookie')

    const reloaded = await browser.get(String(posted.headers.location))
    assert.equal(reloaded.statusCode, 200, reloaded.body)
    assert.equal(reloaded.body.includes(key), false, 'the secret is not shown again')
    assert.equal(messageOf(reloaded.body), 'The key laptop was shown once, right after it was made, and cannot be shown again. If you did not copy it, revoke it and generate a new one.')
    assert.equal((await store.apiKeys.listByAccount(accountId)).length, 1, 'one key, however often the page is reloaded')

    const row = await onlyKey(store, 'reload@example.com', 'laptop')
    const rolledPost = await roll(browser, row.id, '1h')
    const { response: rolled, key: rolledKey } = await browser.showNewKey(rolledPost)
    assert.match(messageOf(rolled.body), /^The key laptop was rolled: it keeps working until/)
    assert.match(rolled.body, /<dt>Replaces<\/dt>/)
    const again = await browser.get(String(rolledPost.headers.location))
    assert.equal(again.statusCode, 200, 'a reload after a roll is no 409')
    assert.equal(again.body.includes(rolledKey), false)
    assert.match(messageOf(again.body), /^The key laptop was shown once/)
    assert.equal((await store.apiKeys.listByAccount(accountId)).length, 2, 'rolled once')

    // A cookie that does not open for this session (tampered, or sealed for another session) shows nothing.
    const other = new PortalClient(app)
    await other.signedUpAs(store, 'reload-other@example.com')
    const otherPosted = await other.submit('/portal/keys', '/portal/keys', { ...DEFAULT_KEY_FIELDS, label: 'theirs' })
    const theirs = other.cookies.get('portal_new_key') ?? ''
    for (const value of [theirs, `${theirs.slice(0, -2)}AA`, 'not-a-sealed-value']) {
      browser.cookies.set('portal_new_key', value)
      const page = await browser.get(String(rolledPost.headers.location))
      assert.equal(page.statusCode, 200, page.body)
      assert.doesNotMatch(page.body, /id="new-key-value"/, value)
    }
    assert.equal((await other.showNewKey(otherPosted)).response.statusCode, 200, 'their own page still shows their key')
  })

  test('rolling at the cap of live keys is refused with a clear message: a rolled key counts until its grace period ends', { timeout: 60_000 }, async () => {
    const { app, store } = testApp()
    const browser = new PortalClient(app)
    await browser.signedUpAs(store, 'full@example.com')
    const accountId = await accountIdOf(store, 'full@example.com')
    await browser.generateKey('first')
    for (let index = 0; index < MAX_LIVE_KEYS - 2; index++) {
      const generated = generateApiKey()
      await store.apiKeys.create({ id: newKeyId(), accountId, label: null, prefix: generated.prefix, hash: generated.hash }, { maxLive: MAX_LIVE_KEYS })
    }
    const first = await onlyKey(store, 'full@example.com', 'first')
    // 99 live keys: the roll fits, and then the rolled key and its successor make 100.
    assert.equal((await roll(browser, first.id, '24h')).statusCode, 303)
    const successor = (await store.apiKeys.findById(first.id))?.rolledTo ?? ''
    const full = await browser.submit('/portal/keys', '/portal/keys', { ...DEFAULT_KEY_FIELDS, label: 'one more' })
    assert.equal(full.statusCode, 400, full.body)
    assert.match(messageOf(full.body), /a rolled key counts until its grace period ends/)

    for (const grace of ['24h', '0']) {
      const refused = await roll(browser, successor, grace)
      assert.equal(refused.statusCode, 400, refused.body)
      assert.equal(messageOf(refused.body), `You have ${MAX_LIVE_KEYS} active keys, the most an account may have, and rolling needs room for the new key: a rolled key counts ` +
        'until its grace period ends, even a grace period of none. Revoke a key you no longer use first, then roll this one.')
      assert.match(refused.body, new RegExp(`<option value="${grace}" selected>`), 'the choice is kept')
    }
    assert.equal((await store.apiKeys.pageByAccount(accountId, { live: true, limit: 1, offset: 0 })).total, MAX_LIVE_KEYS)
    assert.equal((await store.apiKeys.findById(successor))?.rolledTo, null, 'the key was not rolled')
  })

  test('rolling is a key generation: beyond the hourly budget it gets a 429 page with Retry-After', async () => {
    const { app, store } = testApp()
    const browser = new PortalClient(app)
    await browser.signedUpAs(store, 'budget@example.com')
    await browser.generateKey('kept')
    const row = await onlyKey(store, 'budget@example.com', 'kept')
    const now = new Date()
    for (let i = 0; i < KEY_CHANGE_LIMIT.maxPerWindow - 1; i++) {
      await store.loginAttempts.record([keyChangeSubject('generation', row.accountId)], now, new Date(now.getTime() - KEY_CHANGE_LIMIT.windowMs))
    }
    const refused = await roll(browser, row.id, '1h')
    assert.equal(refused.statusCode, 429, refused.body)
    assert.match(String(refused.headers['retry-after']), /^\d+$/)
    assert.match(refused.body, /<h1>Too many new keys<\/h1>/)
    assert.match(messageOf(refused.body), /^The account has made 30 key generations in the last hour, the most allowed; try again in \d+ minutes?\.$/)
    assert.equal((await store.apiKeys.findById(row.id))?.rolledTo, null)
  })

  test("a key's page shows its last 30 days as an SVG bar chart by outcome, with a text alternative, a table and totals by outcome and operation", async () => {
    const { app, store } = testApp()
    const browser = new PortalClient(app)
    await browser.signedUpAs(store, 'usage@example.com')
    await browser.generateKey('charted')
    const row = await onlyKey(store, 'usage@example.com', 'charted')
    const now = Date.now()
    const hour = (daysAgo: number): Date => new Date(now - (now % 3_600_000) - daysAgo * DAY_MS)
    const day = (daysAgo: number): string => new Date(now - daysAgo * DAY_MS).toISOString().slice(0, 10)
    await store.keyUsage.add([
      { keyId: row.id, hour: hour(0), operation: 'listPets', outcome: '2xx', count: 40 },
      { keyId: row.id, hour: hour(0), operation: 'createPet', outcome: '4xx', count: 3 },
      { keyId: row.id, hour: hour(3), operation: 'getPet', outcome: '2xx', count: 7 },
      { keyId: row.id, hour: hour(3), operation: 'getPet', outcome: '5xx', count: 1 },
      { keyId: row.id, hour: hour(45), operation: 'listPets', outcome: '2xx', count: 1000 }
    ])

    const page = await browser.get(`/portal/keys/${row.id}`)
    assert.equal(page.statusCode, 200, page.body)
    assertPortalHeaders(page, 'the key page')
    assertNoInlineCode(page.body, 'the key page')
    assert.match(page.body, /<h1>Key &ldquo;charted&rdquo;<\/h1>/)
    const svg = /<svg class="usage-chart"[^>]*>[\s\S]*?<\/svg>/.exec(page.body)?.[0] ?? ''
    assert.match(svg, /^<svg class="usage-chart" id="usage-chart" viewBox="0 0 640 240" [^>]*role="img" aria-labelledby="usage-chart-title usage-chart-desc"/)
    assert.match(svg, /<title id="usage-chart-title">Requests per day with the key charted, last 30 days<\/title>/)
    assert.match(svg, /<desc id="usage-chart-desc">51 requests in the 30 days from \d{4}-\d{2}-\d{2} to \d{4}-\d{2}-\d{2}: 47 succeeded \(2xx\), 3 refused \(4xx\), 1 failed \(5xx\)\./)
    assert.equal((svg.match(/<g class="day" /g) ?? []).length, 30, 'one bar per day')
    assert.match(svg, new RegExp(`<g class="day" data-day="${day(0)}" data-total="43"><title>[^<]*</title><rect class="bar-2xx" [^>]*></rect><rect class="bar-4xx" `))
    assert.match(svg, new RegExp(`<g class="day" data-day="${day(3)}" data-total="8">`))
    assert.doesNotMatch(svg, /<script|style=/)

    const table = /<table class="numbers" id="usage-table">[\s\S]*?<\/table>/.exec(page.body)?.[0] ?? ''
    assert.match(page.body, /<details>\s*<summary>Requests per day, as a table<\/summary>/)
    assert.equal((table.match(/<tr><th scope="row">/g) ?? []).length, 30)
    assert.match(table, new RegExp(`${day(0)}</time></th><td class="number">40</td><td class="number">3</td><td class="number">0</td><td class="number">43</td>`))
    assert.match(page.body, /<table class="numbers" id="usage-by-outcome">[\s\S]*?<td class="number">47<\/td><td class="number">3<\/td><td class="number">1<\/td><td class="number">51<\/td>/)
    const byOperation = /<table class="numbers" id="usage-by-operation">[\s\S]*?<\/table>/.exec(page.body)?.[0] ?? ''
    assert.deepEqual([...byOperation.matchAll(/<th scope="row"><code>([a-zA-Z]+)<\/code><\/th>((?:<td class="number">\d+<\/td>){4})/g)].map((match) => `${match[1] ?? ''} ${(match[2] ?? '').replace(/<[^>]+>/g, ' ').trim().split(/\s+/).join(' ')}`),
      ['listPets 40 0 0 40', 'getPet 7 0 1 8', 'createPet 0 3 0 3'], 'the 45-day-old counts are not in the last 30 days')
  })

  test("a key's usage counts the API's answers by outcome, as the requests were made with it (counted on another instance, written when it closes)", { timeout: 60_000 }, async () => {
    const { app, store } = testApp()
    const browser = new PortalClient(app)
    await browser.signedUpAs(store, 'counted@example.com')
    const { key } = await browser.generateKey('reader', { scopes: ['animals:read'] })
    const row = await onlyKey(store, 'counted@example.com', 'reader')
    const other = await buildServedApp({ config: loadConfig({ ...TEST_DEFAULTS }), store, logger: pino({ level: 'silent' }) })
    try {
      assert.equal(await apiStatus(other, key), 200)
      assert.equal(await apiStatus(other, key), 200)
      assert.equal((await createPet(other, key)).statusCode, 403)
    } finally {
      // Closing writes what the instance counted.
      await other.close()
    }
    const page = await browser.get(`/portal/keys/${row.id}`)
    assert.match(page.body, /3 requests in the last 30 days\./)
    const byOperation = /<table class="numbers" id="usage-by-operation">[\s\S]*?<\/table>/.exec(page.body)?.[0] ?? ''
    assert.match(byOperation, /<code>listPets<\/code><\/th><td class="number">2<\/td><td class="number">0<\/td><td class="number">0<\/td>/)
    assert.match(byOperation, /<code>createPet<\/code><\/th><td class="number">0<\/td><td class="number">1<\/td><td class="number">0<\/td>/)
  })

  test("another account's key id gets the same 404 as an unknown one on the key page and the roll pages, and nothing is rolled", async () => {
    const { app, store } = testApp()
    const alice = new PortalClient(app)
    await alice.signedUpAs(store, 'alice@example.com')
    await alice.generateKey('alice key')
    const aliceRow = await onlyKey(store, 'alice@example.com', 'alice key')
    const bob = new PortalClient(app)
    await bob.signedUpAs(store, 'bob-keys@example.com')
    const token = csrfTokenOf((await bob.get('/portal/keys')).body)
    const unknownId = 'key_0000000000000000'
    for (const [name, other, unknown] of [
      ['key page', await bob.get(`/portal/keys/${aliceRow.id}`), await bob.get(`/portal/keys/${unknownId}`)],
      ['roll confirmation', await bob.get(`/portal/keys/${aliceRow.id}/roll`), await bob.get(`/portal/keys/${unknownId}/roll`)],
      ['roll', await bob.post(`/portal/keys/${aliceRow.id}/roll`, { _csrf: token, grace: '0' }), await bob.post(`/portal/keys/${unknownId}/roll`, { _csrf: token, grace: '0' })]
    ] as const) {
      assert.equal(other.statusCode, 404, `${name}: ${other.body}`)
      assert.equal(messageOf(other.body), 'None of your keys has this id.', name)
      assert.equal(other.body, unknown.body, name)
    }
    assert.equal((await bob.get('/portal/keys/not-a-key-id')).statusCode, 404)
    assert.equal((await store.apiKeys.findById(aliceRow.id))?.rolledTo, null, "alice's key was not rolled")
    assert.equal((await new PortalClient(app).get(`/portal/keys/${aliceRow.id}`)).statusCode, 303, 'only for a session')
  })

  test('control characters in the scopes, the expiry or the grace period get 400 naming the field, and change nothing', async () => {
    const { app, store } = testApp()
    const browser = new PortalClient(app)
    await browser.signedUpAs(store, 'controls@example.com')
    for (const [fields, message] of [
      [{ scopes: ['animals:read\u0000'] }, /^The scopes must not contain control characters \(it contains U\+0000\)\.$/],
      [{ scopes: ['animals:read', '\tanimals:write'] }, /^The scopes must not contain control characters \(it contains U\+0009\)\.$/],
      [{ expires_in: '7d\n' }, /^The duration must not contain control characters \(it contains U\+000A\)\.$/]
    ] as const) {
      const response = await browser.submit('/portal/keys', '/portal/keys', { ...DEFAULT_KEY_FIELDS, label: 'x', ...fields })
      assert.equal(response.statusCode, 400, response.body)
      assert.match(messageOf(response.body), message)
      assert.equal(response.body.includes('\u0000') || response.body.includes('\tanimals'), false, 'what was sent is not shown back with its control characters')
    }
    assert.deepEqual(await store.apiKeys.listByAccount(await accountIdOf(store, 'controls@example.com')), [])
    await browser.generateKey('kept')
    const row = await onlyKey(store, 'controls@example.com', 'kept')
    const refused = await roll(browser, row.id, '1h\u007f')
    assert.equal(refused.statusCode, 400, refused.body)
    assert.match(messageOf(refused.body), /^The duration must not contain control characters \(it contains U\+007F\)\.$/)
    const unknown = await roll(browser, row.id, 'a while')
    assert.equal(unknown.statusCode, 400, unknown.body)
    assert.equal(messageOf(unknown.body), 'Choose how long the old key keeps working from the list the form offers: None, 1 hour, 24 hours, 7 days.')
    assert.equal((await store.apiKeys.findById(row.id))?.rolledTo, null)
  })

  test('a tampered form is refused with 400: a field sent twice on every form, an expiry or a grace period the form does not offer; nothing changes', async () => {
    const { app, store } = testApp()
    const browser = new PortalClient(app)
    await browser.signedUpAs(store, 'tamper@example.com')
    const accountId = await accountIdOf(store, 'tamper@example.com')
    const twice = (response: LightMyRequestResponse, name: string, context: string): void => {
      assert.equal(response.statusCode, 400, `${context}: ${response.body}`)
      assert.equal(messageOf(response.body), `The form sent the field “${name}” more than once. Reload the page and send the form again.`, context)
      assertPortalHeaders(response, context)
    }
    const keysPage = async (): Promise<string> => (await browser.get('/portal/keys')).body
    // A key that never expires from a form whose expiry said 7 days, or a label picked from two.
    twice(await browser.post('/portal/keys', { _csrf: csrfTokenOf(await keysPage()), ...DEFAULT_KEY_FIELDS, label: 'x', expires_in: ['7d', 'never'] }), 'expires_in', 'expiry twice')
    twice(await browser.post('/portal/keys', { _csrf: csrfTokenOf(await keysPage()), ...DEFAULT_KEY_FIELDS, label: ['one', 'two'] }), 'label', 'label twice')
    for (const expiry of ['1s', '3650d', '1h', '']) {
      const refused = await browser.submit('/portal/keys', '/portal/keys', { ...DEFAULT_KEY_FIELDS, label: `expiry ${expiry}`, expires_in: expiry })
      assert.equal(refused.statusCode, 400, `${expiry}: ${refused.body}`)
      assert.equal(messageOf(refused.body), 'Choose when the key expires from the list the form offers: Never, In 7 days, In 30 days, In 90 days, In 1 year.', expiry)
      assert.match(refused.body, /<option value="never" selected>/, 'the form comes back with an offered choice')
    }
    assert.deepEqual(await store.apiKeys.listByAccount(accountId), [], 'no key was made')

    await browser.generateKey('kept')
    const row = await onlyKey(store, 'tamper@example.com', 'kept')
    const confirm = async (action: string): Promise<string> => csrfTokenOf((await browser.get(`/portal/keys/${row.id}/${action}`)).body)
    for (const grace of ['3650d', '1m', '']) {
      const refused = await browser.post(`/portal/keys/${row.id}/roll`, { _csrf: await confirm('roll'), grace })
      assert.equal(refused.statusCode, 400, `${grace}: ${refused.body}`)
      assert.equal(messageOf(refused.body), 'Choose how long the old key keeps working from the list the form offers: None, 1 hour, 24 hours, 7 days.', grace)
      assert.match(refused.body, /<option value="24h" selected>/)
    }
    twice(await browser.post(`/portal/keys/${row.id}/roll`, { _csrf: await confirm('roll'), grace: ['7d', '0'] }), 'grace', 'grace twice')
    twice(await browser.post(`/portal/keys/${row.id}/revoke`, { _csrf: [await confirm('revoke'), 'x'] }), '_csrf', 'revoke with two tokens')
    const after = await store.apiKeys.findById(row.id)
    assert.equal(after?.rolledTo, null, 'not rolled')
    assert.equal(after?.live, true, 'not revoked')
    twice(await browser.post('/portal/logout', { _csrf: [csrfTokenOf(await keysPage()), csrfTokenOf(await keysPage())] }), '_csrf', 'log-out with two tokens')
    assert.equal((await browser.get('/portal/keys')).statusCode, 200, 'still logged in')

    for (const path of ['/portal/login', '/portal/signup']) {
      const other = new PortalClient(app, '192.0.2.77')
      const token = csrfTokenOf((await other.get(path)).body)
      twice(await other.post(path, { _csrf: token, email: ['tamper@example.com', 'other@example.com'], password: PASSWORD }), 'email', `${path} email twice`)
      twice(await other.post(path, { _csrf: token, email: 'tamper@example.com', password: [PASSWORD, 'another long password'] }), 'password', `${path} password twice`)
    }
    assert.equal(await store.accounts.findByEmail('other@example.com'), undefined)
  })

  test("the events page shows the account's own events, newest first, with time, actor, address, key and detail; sign-up and log-ins are recorded, never a password", async () => {
    const { app, store } = testApp()
    await new PortalClient(app, '192.0.2.10').signUp('audited@example.com', PASSWORD)
    const browser = new PortalClient(app, '192.0.2.10')
    const wrong = await new PortalClient(app, '198.51.100.7').logIn('audited@example.com', 'not the password at all')
    assert.equal(wrong.statusCode, 401)
    assert.equal((await new PortalClient(app, '198.51.100.7').logIn('nobody@example.com', 'not the password at all')).statusCode, 401)
    assert.equal((await browser.logIn('audited@example.com', PASSWORD)).statusCode, 303)
    await browser.generateKey('audited key', { scopes: ['animals:read'] })
    const row = await onlyKey(store, 'audited@example.com', 'audited key')
    assert.equal((await roll(browser, row.id, '0')).statusCode, 303)
    const successor = (await store.apiKeys.findById(row.id))?.rolledTo ?? ''
    const confirm = await browser.get(`/portal/keys/${successor}/revoke`)
    assert.equal((await browser.post(`/portal/keys/${successor}/revoke`, { _csrf: csrfTokenOf(confirm.body) })).statusCode, 303)
    const bob = new PortalClient(app)
    await bob.signUp('bob@example.com', PASSWORD)

    const keysPage = await browser.get('/portal/keys')
    assert.match(keysPage.body, /<a href="\/portal\/events">Events on your account<\/a>/)
    const page = await browser.get('/portal/events')
    assert.equal(page.statusCode, 200, page.body)
    assertPortalHeaders(page, 'the events page')
    assertNoInlineCode(page.body, 'the events page')
    assert.deepEqual(eventsOf(page.body), ['key_revoked', 'key_rolled', 'key_created', 'login_succeeded', 'login_failed', 'login_succeeded', 'email_verified', 'verification_sent', 'password_set', 'account_created'])
    const rowOf = (event: string): string => page.body.split('<tr').find((part) => part.startsWith(` data-event="${event}"`)) ?? ''
    assert.match(rowOf('login_failed'), /<td data-label="Event">Log-in failed<\/td>\s*<td data-label="By">Portal<\/td>\s*<td data-label="Address">198\.51\.100\.7<\/td>\s*<td data-label="Key"><\/td>\s*<td data-label="Detail">wrong password<\/td>/)
    assert.match(rowOf('login_succeeded'), /<td data-label="Event">Logged in<\/td>[\s\S]*192\.0\.2\.10/)
    assert.match(rowOf('account_created'), /<td data-label="Time"><time datetime="[^"]+"><span>\d{4}-\d{2}-\d{2}<\/span> <span>\d{2}:\d{2}:\d{2} UTC<\/span><\/time><\/td>\s*<td data-label="Event">Account created<\/td>\s*<td data-label="By">Portal<\/td>\s*<td data-label="Address">192\.0\.2\.10<\/td>/)
    const successorRow = await store.apiKeys.findById(successor)
    const named = (key: { id: string, prefix: string } | undefined): string => `<a href="/portal/keys/${key?.id ?? ''}">audited key <code>${key?.prefix ?? ''}&hellip;</code></a>`
    const time = '<time datetime="[^"]+"><span>\\d{4}-\\d{2}-\\d{2}</span> <span>\\d{2}:\\d{2}:\\d{2} UTC</span></time>'
    // Keys by label and prefix, as the keys page names them, and one time format, in the columns and in the details alike.
    assert.match(rowOf('key_rolled'), new RegExp(`<td data-label="Key">${named(row)}</td>\\s*<td data-label="Detail">replaced by ${named(successorRow)}; works until ${time}</td>`))
    assert.match(rowOf('key_revoked'), new RegExp(`<td data-label="Key">${named(successorRow)}</td>`))
    assert.match(rowOf('key_created'), /scopes animals:read; no expiry/)
    const shownText = page.body.replace(/<[^>]*>/g, '')
    assert.doesNotMatch(shownText, /key_[0-9A-Za-z]{16}/, 'no key is named by its id')
    assert.doesNotMatch(shownText, /\d{4}-\d{2}-\d{2}T\d{2}:/, 'no time in another format')
    assert.equal(page.body.includes(PASSWORD) || page.body.includes('not the password at all'), false, 'no password in the events')
    assert.doesNotMatch(page.body, /bob@example|nobody@example/)
    const bobEvents = eventsOf((await bob.get('/portal/events')).body)
    assert.deepEqual(bobEvents, ['login_succeeded', 'email_verified', 'verification_sent', 'password_set', 'account_created'], "bob sees only his own; an unknown email's failed log-in is recorded nowhere")
    assert.equal((await new PortalClient(app).get('/portal/events')).statusCode, 303, 'only for a session')
  })

  test('the events page holds 50 events; "Older events" pages on by id', async () => {
    const { app, store } = testApp()
    // The events sign-up records are checked in the test above; here the account has none but these.
    const browser = new PortalClient(app)
    const accountId = await browser.signedUpAs(store, 'many@example.com')
    for (let index = 0; index < 58; index++) {
      await appendAuditEvent(store.audit, 'scope_denied', { actor: 'api', address: '203.0.113.5' }, { accountId, keyId: null, detail: `request ${index}` })
    }
    const first = await browser.get('/portal/events')
    assert.equal(eventsOf(first.body).length, 50)
    assert.match(first.body, /<td data-label="Detail">request 57<\/td>/)
    const older = /<a href="(\/portal\/events\?before=\d+)" rel="next">Older events<\/a>/.exec(first.body)?.[1]
    assert.ok(older, first.body)
    const second = await browser.get(older)
    assert.deepEqual(eventsOf(second.body), Array(8).fill('scope_denied'))
    assert.match(second.body, /<td data-label="Detail">request 7<\/td>/)
    assert.doesNotMatch(second.body, /request 8</)
    assert.doesNotMatch(second.body, /Older events/)
    assert.match(second.body, /<a href="\/portal\/events">Newest events<\/a>/)
    assert.equal((await browser.get('/portal/events?before=abc')).statusCode, 200, 'a malformed position starts at the newest')
  })
})
