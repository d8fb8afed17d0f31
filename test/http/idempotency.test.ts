import { describe, test } from 'node:test'
import assert from 'node:assert/strict'
import { fingerprintOf } from '../../src/core/idempotency.js'
import { buildTestApp, createTestKey, perSuite, type TestApp } from '../helpers/build-app.js'

async function create (testApp: TestApp, body: string, key?: string, auth = testApp.auth): Promise<{ status: number, body: string, location: unknown }> {
  const response = await testApp.app.inject({
    method: 'POST',
    url: '/v1/pets',
    headers: { ...auth, 'content-type': 'application/json', ...(key !== undefined && { 'idempotency-key': key }) },
    payload: body
  })
  return { status: response.statusCode, body: response.body, location: response.headers.location }
}

async function count (testApp: TestApp): Promise<number> {
  const page = await testApp.store.pets.listPage({ status: undefined, afterId: 0, limit: 100 })
  return page.pets.length
}

describe('createPet with Idempotency-Key', () => {
  describe('happy', () => {
    // Every test uses Idempotency-Keys of its own and counts the animals it adds: one app for all.
    const shared = perSuite(async (scope) => await buildTestApp(scope))

    test('a retry with the same key and body returns the first response and creates nothing', async () => {
      const testApp = await shared()
      const before = await count(testApp)
      const first = await create(testApp, '{"name":"Rex","categoryId":9007199254740993,"status":"sold"}', 'order-1')
      assert.equal(first.status, 201, first.body)
      const retry = await create(testApp, '{ "status": "sold", "categoryId": 9007199254740993, "name": "Rex" }', 'order-1')
      assert.deepEqual(retry, first)
      assert.equal(await count(testApp), before + 1)
    })

    test('a quoted key (structured-field string) is the same key', async () => {
      const testApp = await shared()
      const first = await create(testApp, '{"name":"Rex","categoryId":1}', '"k-1"')
      const retry = await create(testApp, '{"name":"Rex","categoryId":1}', 'k-1')
      assert.deepEqual(retry, first)
    })

    test('keys are scoped to the API key that sent them', async () => {
      const testApp = await shared()
      const before = await count(testApp)
      const other = { authorization: `Bearer ${await createTestKey(testApp.store, 'other@example.com')}` }
      const mine = await create(testApp, '{"name":"Rex","categoryId":1}', 'shared')
      const theirs = await create(testApp, '{"name":"Rex","categoryId":1}', 'shared', other)
      assert.equal(theirs.status, 201)
      assert.notEqual(theirs.location, mine.location)
      assert.equal(await count(testApp), before + 2)
    })

    test('a key older than 24 hours is forgotten', async () => {
      const testApp = await shared()
      const apiKeyId = (await testApp.store.apiKeys.listByAccount((await testApp.store.accounts.findByEmail('test@example.com'))!.id))[0]!.id
      const dayAgo = new Date(Date.now() - 24 * 60 * 60 * 1000 - 1000)
      await testApp.store.idempotency.claim({ apiKeyId, key: 'old' }, 'another-fingerprint', { now: dayAgo, expiredBefore: new Date(0), abandonedBefore: new Date(0) })
      const fresh = await create(testApp, '{"name":"Rex","categoryId":1}', 'old')
      assert.equal(fresh.status, 201, fresh.body)
    })

    test('requests without the header are never deduplicated', async () => {
      const testApp = await shared()
      const before = await count(testApp)
      await create(testApp, '{"name":"Rex","categoryId":1}')
      await create(testApp, '{"name":"Rex","categoryId":1}')
      assert.equal(await count(testApp), before + 2)
    })
  })

  describe('error', () => {
    // Every test uses Idempotency-Keys of its own and counts the animals it adds: one app for all.
    const shared = perSuite(async (scope) => await buildTestApp(scope))

    test('returns 422 idempotency_key_reused when the key comes back with another animal', async () => {
      const testApp = await shared()
      const before = await count(testApp)
      await create(testApp, '{"name":"Rex","categoryId":1}', 'another-animal')
      const reused = await create(testApp, '{"name":"Tom","categoryId":1}', 'another-animal')
      assert.equal(reused.status, 422, reused.body)
      assert.deepEqual(JSON.parse(reused.body), { code: 'idempotency_key_reused', message: 'this Idempotency-Key was already used with a different animal; use a new key', status: 422 })
      assert.equal(await count(testApp), before + 1)
    })

    test('returns 422 idempotency_key_reused when the key comes back with only the status changed, added or dropped', async () => {
      const testApp = await shared()
      const before = await count(testApp)
      const first = await create(testApp, '{"name":"Rex","categoryId":1,"status":"available"}', 'k')
      assert.equal(first.status, 201, first.body)
      for (const body of ['{"name":"Rex","categoryId":1,"status":"sold"}', '{"name":"Rex","categoryId":1}']) {
        const reused = await create(testApp, body, 'k')
        assert.equal(reused.status, 422, `${body}: ${reused.body}`)
        assert.equal((JSON.parse(reused.body) as { code: string }).code, 'idempotency_key_reused')
      }
      const statusless = await create(testApp, '{"name":"Tom","categoryId":2}', 'k2')
      assert.equal(statusless.status, 201, statusless.body)
      const withStatus = await create(testApp, '{"name":"Tom","categoryId":2,"status":"pending"}', 'k2')
      assert.equal(withStatus.status, 422, withStatus.body)
      assert.equal(await count(testApp), before + 2)
    })

    test('returns 409 idempotency_key_in_use while the first request with the key is in flight', async () => {
      const testApp = await shared()
      const before = await count(testApp)
      const account = await testApp.store.accounts.findByEmail('test@example.com')
      const [apiKey] = await testApp.store.apiKeys.listByAccount(account!.id)
      const now = new Date()
      // A claim that is taken but not completed is exactly what an in-flight request leaves.
      await testApp.store.idempotency.claim({ apiKeyId: apiKey!.id, key: 'busy' }, fingerprintOf({ name: 'Rex', categoryId: 1 }), { now, expiredBefore: new Date(0), abandonedBefore: new Date(0) })
      const second = await create(testApp, '{"name":"Rex","categoryId":1}', 'busy')
      assert.equal(second.status, 409, second.body)
      assert.deepEqual(JSON.parse(second.body), { code: 'idempotency_key_in_use', message: 'a request with this Idempotency-Key is still being processed; retry shortly', status: 409 })
      assert.equal(await count(testApp), before)
    })

    for (const key of ['', 'has space', 'ü', 'x'.repeat(256)]) {
      test(`returns 400 invalid_request naming Idempotency-Key for ${JSON.stringify(key.slice(0, 12))}`, async () => {
        const testApp = await shared()
        const before = await count(testApp)
        const response = await create(testApp, '{"name":"Rex","categoryId":1}', key)
        assert.equal(response.status, 400, response.body)
        assert.match(JSON.parse(response.body).message, /Idempotency-Key/)
        assert.equal(await count(testApp), before)
      })
    }

    test('an invalid body with a key is refused without using up the key', async () => {
      const testApp = await shared()
      assert.equal((await create(testApp, '{"name":"Rex"}', 'unused')).status, 400)
      assert.equal((await create(testApp, '{"name":"Rex","categoryId":1}', 'unused')).status, 201)
    })
  })
})
