import { describe, test, type TestContext } from 'node:test'
import assert from 'node:assert/strict'
import { SANDBOX_SEED } from '../../src/core/demo-pets.js'
import { createAccount, createApiKey, resetSandbox } from '../../src/services/accounts.js'
import type { Store } from '../../src/storage/store.js'
import type { Response as LightMyRequestResponse } from 'light-my-request'
import { assertError } from '../helpers/api-responses.js'
import type { FastifyInstance } from 'fastify'
import { pino } from 'pino'
import { loadConfig } from '../../src/config.js'
import { openPostgresStore } from '../../src/storage/postgres/postgres-store.js'
import { openSqliteStore } from '../../src/storage/sqlite/sqlite-store.js'
import { buildServedApp, buildTestApp, METRICS_AUTH, TEST_DEFAULTS, TEST_ENGINE, type TestApp } from '../helpers/build-app.js'
import { eventually } from '../helpers/eventually.js'
import { csrfTokenOf, messageOf, PortalClient } from '../helpers/portal-client.js'

interface Pet { id: number, name: string, categoryId: number, status?: string }

const JSON_TYPE = { 'content-type': 'application/json' }

async function testKey (store: Store, email = 'test@example.com', scopes?: Array<'animals:read' | 'animals:write'>): Promise<{ authorization: string }> {
  if (await store.accounts.findByEmail(email) === undefined) await createAccount(store, { email })
  const { key } = await createApiKey(store, { email, mode: 'test', scopes })
  assert.match(key, /^ask_test_[0-9A-Za-z]{38}$/)
  return { authorization: `Bearer ${key}` }
}

async function create (t: TestApp, auth: { authorization: string }, pet: object, headers: Record<string, string> = {}) {
  return await t.app.inject({ method: 'POST', url: '/v1/pets', headers: { ...auth, ...JSON_TYPE, ...headers }, payload: JSON.stringify(pet) })
}

/** Every animal the key sees, following the Link headers from a page of `limit`. */
async function everyPet (t: TestApp, auth: { authorization: string }, limit = 7): Promise<Pet[]> {
  const pets: Pet[] = []
  let url: string | undefined = `/v1/pets?limit=${limit}`
  while (url !== undefined) {
    const response: LightMyRequestResponse = await t.app.inject({ url, headers: auth })
    assert.equal(response.statusCode, 200, response.body)
    pets.push(...response.json<Pet[]>())
    const link = response.headers.link as string | undefined
    url = link === undefined ? undefined : /<([^>]+)>; rel="next"/.exec(link)?.[1]
  }
  return pets
}

/** Another instance on the same database: a store and an app of its own, with caches of its own. */
async function secondInstance (t: TestContext, first: TestApp): Promise<FastifyInstance> {
  const store = TEST_ENGINE === 'postgres' ? openPostgresStore(first.databaseUrl, { poolSize: 2, onError: () => {} }) : openSqliteStore(first.dbPath)
  t.after(() => store.close())
  const app = await buildServedApp({ config: loadConfig(TEST_DEFAULTS), store, logger: pino({ level: 'silent' }) })
  t.after(() => app.close())
  return app
}

const seeded = (): Pet[] => SANDBOX_SEED.map((pet, index) => ({ id: index + 1, name: pet.name, categoryId: Number(pet.categoryId), ...(pet.status !== undefined && { status: pet.status }) }))

describe('test mode: the sandbox', () => {
  test('a test key sees its seeded sandbox, never the live catalogue, and the other way round (list, get, create, paging)', async (t) => {
    const app = await buildTestApp(t)
    await app.store.pets.insertMany(Array.from({ length: 30 }, (_, index) => ({ name: `Live ${index + 1}`, categoryId: 100 })))
    const test = await testKey(app.store)

    const sandbox = await everyPet(app, test)
    assert.deepEqual(sandbox, seeded(), 'a new sandbox holds the demo catalogue, ids from 1')
    assert.deepEqual(new Set(sandbox.map((pet) => pet.status ?? 'none')), new Set(['available', 'pending', 'sold']))

    const created = await create(app, test, { name: 'Sandbox Rex', categoryId: 7, status: 'pending' })
    assert.equal(created.statusCode, 201, created.body)
    assert.deepEqual(created.json(), { id: 21, name: 'Sandbox Rex', categoryId: 7, status: 'pending' })
    assert.equal(created.headers.location, '/v1/pets/21')

    const live = await everyPet(app, app.auth)
    assert.equal(live.length, 30)
    assert.ok(live.every((pet) => pet.name.startsWith('Live ')), 'no sandbox animal in the live catalogue')
    const inSandbox = await everyPet(app, test, 5)
    assert.deepEqual(inSandbox.map((pet) => pet.id), Array.from({ length: 21 }, (_, index) => index + 1), 'paging visits each sandbox animal once')
    assert.ok(inSandbox.every((pet) => !pet.name.startsWith('Live ')), 'no live animal in the sandbox')

    // The same id names a different animal in each mode, and an id of one mode alone is a 404 in the other.
    const sandboxOne = await app.app.inject({ url: '/v1/pets/1', headers: test })
    assert.equal(sandboxOne.json<Pet>().name, SANDBOX_SEED[0]?.name)
    assert.equal((await app.app.inject({ url: '/v1/pets/1', headers: app.auth })).json<Pet>().name, 'Live 1')
    assertError(await app.app.inject({ url: '/v1/pets/30', headers: test }), 404, 'not_found', /no animal has id 30/)
    const liveCreated = await create(app, app.auth, { name: 'Live Tom', categoryId: 1 })
    assert.equal(liveCreated.json<Pet>().id, 31)
    assertError(await app.app.inject({ url: '/v1/pets/31', headers: test }), 404, 'not_found', /no animal has id 31/)
    assert.equal((await app.app.inject({ url: '/v1/pets/21', headers: app.auth })).json<Pet>().name, 'Live 21')
    const pendingLive = (await app.app.inject({ url: '/v1/pets?status=pending&limit=100', headers: app.auth })).json<Pet[]>()
    assert.deepEqual(pendingLive, [], 'the live catalogue has no pending animal')
  })

  test("accounts' sandboxes are apart: one account's test key never sees another's animals", async (t) => {
    const app = await buildTestApp(t)
    const mine = await testKey(app.store, 'me@example.com')
    const theirs = await testKey(app.store, 'them@example.com')
    const created = await create(app, mine, { name: 'Mine', categoryId: 1 })
    assert.equal(created.json<Pet>().id, 21)
    assertError(await app.app.inject({ url: '/v1/pets/21', headers: theirs }), 404, 'not_found', /no animal has id 21/)
    assert.deepEqual(await everyPet(app, theirs), seeded())
    assert.equal((await create(app, theirs, { name: 'Theirs', categoryId: 2 })).json<Pet>().id, 21, 'ids are numbered per sandbox')
    assert.equal((await app.app.inject({ url: '/v1/pets/21', headers: mine })).json<Pet>().name, 'Mine')
  })

  test('a reset empties and reseeds the sandbox: no cached page or animal survives it, and the live catalogue is untouched', async (t) => {
    const app = await buildTestApp(t)
    await create(app, app.auth, { name: 'Live Rex', categoryId: 1 })
    const test = await testKey(app.store)
    for (let index = 0; index < 5; index++) assert.equal((await create(app, test, { name: `Made ${index}`, categoryId: 3 })).statusCode, 201)
    // Cached: a full page and an animal, read twice.
    for (let read = 0; read < 2; read++) {
      assert.equal((await app.app.inject({ url: '/v1/pets?limit=25', headers: test })).json<Pet[]>().length, 25)
      assert.equal((await app.app.inject({ url: '/v1/pets/23', headers: test })).json<Pet>().name, 'Made 2')
    }
    const account = await app.store.accounts.findByEmail('test@example.com')
    assert.ok(account)
    // Straight through the store, as the CLI resets it: the app hears of it from the feed of resets.
    await resetSandbox(app.store, account.id)
    await eventually(async () => {
      assertError(await app.app.inject({ url: '/v1/pets/23', headers: test }), 404, 'not_found', /no animal has id 23/)
    }, { timeout: 5000 })
    const page = await app.app.inject({ url: '/v1/pets?limit=25', headers: test })
    assert.deepEqual(page.json(), seeded())
    assert.equal(page.headers.link, undefined)
    assert.equal((await create(app, test, { name: 'After', categoryId: 3 })).json<Pet>().id, 21, 'ids start again after the seed')
    assert.deepEqual((await everyPet(app, app.auth)).map((pet) => pet.name), ['Live Rex'])
    const [event] = await app.store.audit.page(account.id, { limit: 1 })
    assert.equal(event?.event, 'sandbox_reset')
    assert.equal(event?.actor, 'cli')
  })

  test('SANDBOX_MAX_PETS bounds a sandbox: beyond it createPet gets 403 sandbox_full saying how to reset; live creates go on', async (t) => {
    const app = await buildTestApp(t, { SANDBOX_MAX_PETS: '22' })
    const test = await testKey(app.store)
    assert.equal((await create(app, test, { name: 'One', categoryId: 1 })).statusCode, 201)
    assert.equal((await create(app, test, { name: 'Two', categoryId: 1 })).statusCode, 201)
    const full = await create(app, test, { name: 'Three', categoryId: 1 })
    assertError(full, 403, 'sandbox_full', /holds 22 animals.*Reset test data.*animal-store sandbox reset/)
    assert.equal((await everyPet(app, test)).length, 22)
    assert.equal((await create(app, app.auth, { name: 'Live', categoryId: 1 })).statusCode, 201)
    const account = await app.store.accounts.findByEmail('test@example.com')
    await resetSandbox(app.store, account?.id ?? 0)
    assert.equal((await create(app, test, { name: 'Again', categoryId: 1 })).statusCode, 201)
  })

  test('test keys keep the contract: validation, scopes, deprecation headers, Idempotency-Key, their own rate limit, the mode in metrics and log', async (t) => {
    const lines: string[] = []
    const logger = pino({ level: 'info' }, { write: (line: string) => { lines.push(line) } })
    const app = await buildTestApp(t, { SANDBOX_RATE_LIMIT_PER_MINUTE: '12' }, logger)
    const test = await testKey(app.store)
    const readOnly = await testKey(app.store, 'test@example.com', ['animals:read'])

    assertError(await create(app, test, { name: 'Rex', categoryId: '5' }), 400, 'invalid_request', /categoryId/)
    assertError(await app.app.inject({ url: '/v1/pets?limit=0', headers: test }), 400, 'invalid_request', /limit/)
    assertError(await create(app, readOnly, { name: 'Rex', categoryId: 5 }), 403, 'insufficient_scope', /animals:write/)
    const deprecated = await app.app.inject({ url: '/v1/pets/1', headers: test })
    assert.equal(deprecated.statusCode, 200)
    assert.match(String(deprecated.headers.deprecation), /^@\d+$/)
    assert.equal(deprecated.headers.sunset, 'Thu, 05 Dec 2030 00:00:00 GMT')
    assert.match(String(deprecated.headers.link), /rel="successor-version"/)
    const unknown = await app.app.inject({ url: '/v1/pets/99', headers: test })
    assertError(unknown, 404, 'not_found', /no animal has id 99/)
    assert.match(String(unknown.headers.deprecation), /^@\d+$/)

    const first = await create(app, test, { name: 'Once', categoryId: 1 }, { 'idempotency-key': 'abc-1' })
    const again = await create(app, test, { name: 'Once', categoryId: 1 }, { 'idempotency-key': 'abc-1' })
    assert.equal(first.statusCode, 201)
    assert.deepEqual(again.json(), first.json())
    assertError(await create(app, test, { name: 'Other', categoryId: 1 }, { 'idempotency-key': 'abc-1' }), 422, 'idempotency_key_reused', /Idempotency-Key/)
    assert.equal((await everyPet(app, test, 100)).length, 21)
    assert.equal((await app.app.inject({ url: '/v1/store/orders', headers: test })).statusCode, 501)

    // Twelve requests a minute for test keys (the last counted one is refused), none for the live key.
    let refused
    for (let index = 0; index < 14 && refused === undefined; index++) {
      const response = await app.app.inject({ url: '/v1/pets?limit=1', headers: test })
      if (response.statusCode === 429) refused = response
    }
    assert.ok(refused, 'a test key is rate limited by SANDBOX_RATE_LIMIT_PER_MINUTE')
    assertError(refused, 429, 'rate_limited', /12 requests per minute/)
    assert.equal((await app.app.inject({ url: '/v1/pets', headers: app.auth })).statusCode, 200)

    const metrics = await app.app.inject({ url: '/metrics', headers: METRICS_AUTH })
    assert.match(metrics.body, /http_requests_total\{method="POST",route="\/v1\/pets",status="201",mode="test"\} 2/)
    assert.match(metrics.body, /http_requests_total\{method="GET",route="\/v1\/pets",status="200",mode="live"\} 1/)
    const logged = lines.map((line) => JSON.parse(line) as { url?: string, mode?: string, statusCode?: number }).filter((line) => line.url?.startsWith('/v1/pets') === true)
    assert.ok(logged.some((line) => line.mode === 'test' && line.statusCode === 201))
    assert.ok(logged.some((line) => line.mode === undefined && line.statusCode === 200), 'a live request carries no mode field')
  })
})

describe('test mode in the portal, and on two instances', () => {
  test('the portal generates a test key, shows its mode, and resets the test data (confirmed, with the CSRF token, audited); the other instance sees the reset within 1 s', async (t) => {
    const app = await buildTestApp(t)
    const second = await secondInstance(t, app)
    const browser = new PortalClient(app.app)
    await browser.signedUpAs(app.store, 'dev@example.com')
    const { response, key } = await browser.generateKey('tests', { mode: 'test' })
    assert.match(key, /^ask_test_/)
    assert.match(response.body, /<dt>Mode<\/dt><dd>Test: it reads and writes only your test data<\/dd>/)
    assert.match(response.body, /<code id="snippet">export ANIMAL_STORE_KEY=&#39;ask_test_/)
    assert.match(response.body, /id="test-mode-note">With a test key/)
    assert.match(response.body, /<td data-label="Mode"><span class="mode-test">Test<\/span><\/td>/)
    const live = await browser.generateKey('prod')
    assert.match(live.key, /^ask_(?!test_)/)
    assert.match(live.response.body, /<td data-label="Mode">Live<\/td>/)
    const test = { authorization: `Bearer ${key}` }

    assert.equal((await create(app, test, { name: 'Made', categoryId: 1 })).json<Pet>().id, 21)
    // Both instances have the page and the animal cached before the reset.
    for (const instance of [app.app, second, app.app, second]) {
      assert.equal((await instance.inject({ url: '/v1/pets?limit=21', headers: test })).json<Pet[]>().length, 21)
      assert.equal((await instance.inject({ url: '/v1/pets/21', headers: test })).statusCode, 200)
    }
    const keyId = /\/portal\/keys\/(key_[0-9A-Za-z]{16})"/.exec(response.body)?.[1]
    const keyPage = await browser.get(`/portal/keys/${keyId ?? ''}`)
    assert.match(keyPage.body, /Test requests \(sandbox\) in the last 30 days/)

    assert.equal((await browser.post('/portal/sandbox/reset', {})).statusCode, 403, 'a reset without the CSRF token is refused')
    assert.equal((await second.inject({ url: '/v1/pets/21', headers: test })).statusCode, 200, 'nothing was reset')
    const confirm = await browser.get('/portal/sandbox/reset')
    assert.match(confirm.body, /Reset your test data\?/)
    const reset = await browser.post('/portal/sandbox/reset', { _csrf: csrfTokenOf(confirm.body) })
    assert.equal(reset.statusCode, 303, reset.body)
    assert.equal(reset.headers.location, '/portal/keys?sandbox=reset')
    assert.match(messageOf((await browser.get('/portal/keys?sandbox=reset')).body), /Your test data was reset/)
    assert.equal((await app.app.inject({ url: '/v1/pets/21', headers: test })).statusCode, 404, 'the instance that reset forgets at once')
    await eventually(async () => {
      assert.equal((await second.inject({ url: '/v1/pets/21', headers: test })).statusCode, 404)
      assert.deepEqual((await second.inject({ url: '/v1/pets?limit=21', headers: test })).json(), seeded())
    }, { timeout: 1000 })
    assert.match((await browser.get('/portal/events')).body, /Test data reset/)
  })
})
