import { describe, test } from 'node:test'
import assert from 'node:assert/strict'
import Database from 'better-sqlite3'
import pg from 'pg'
import { pino } from 'pino'
import { loadConfig } from '../../src/config.js'
import { createApiKey, rollApiKey } from '../../src/services/accounts.js'
import type { Store } from '../../src/storage/store.js'
import { buildServedApp, TEST_DEFAULTS, TEST_ENGINE } from '../helpers/build-app.js'
import { eventually, statusOf } from '../helpers/eventually.js'
import { startServer, type TestServer } from '../helpers/start-server.js'

const json = { 'content-type': 'application/json' }
const PET = JSON.stringify({ name: 'Rex', categoryId: 1 })

async function keyWith (store: Store, terms: Parameters<typeof createApiKey>[1]): Promise<{ authorization: string, id: string }> {
  const { key, row } = await createApiKey(store, terms)
  return { authorization: `Bearer ${key}`, id: row.id }
}

async function call (server: TestServer, authorization: string, method: 'GET' | 'POST' | 'HEAD', path: string, body?: string): Promise<Response> {
  return await fetch(`${server.baseUrl}/v1${path}`, { method, headers: { authorization, ...(body !== undefined && json) }, body })
}

/** Runs one statement on the server's database through a connection of its own, as an operator at the console would. */
async function onDatabase (server: TestServer, statement: string): Promise<void> {
  if (TEST_ENGINE === 'sqlite') {
    const db = new Database(server.dbPath)
    try { db.exec(statement) } finally { db.close() }
    return
  }
  const client = new pg.Client({ connectionString: server.databaseUrl })
  await client.connect()
  try { await client.query(statement) } finally { await client.end() }
}

describe('scopes', () => {
  test('a read-only key reads, cached or not, and gets 403 insufficient_scope with the RFC 6750 challenge for a create, before its body is read', async (t) => {
    const server = await startServer(t)
    await call(server, server.auth.authorization, 'POST', '/pets', PET)
    const reader = await keyWith(server.store, { email: 'test@example.com', scopes: ['animals:read'] })
    for (let round = 0; round < 2; round++) {
      assert.equal((await call(server, reader.authorization, 'GET', '/pets?limit=5')).status, 200, `list, round ${round}`)
      assert.equal((await call(server, reader.authorization, 'GET', '/pets/1')).status, 200, `get, round ${round}`)
      assert.equal((await call(server, reader.authorization, 'HEAD', '/pets')).status, 200, `head, round ${round}`)
    }
    for (const body of [PET, '{"not":"valid"}', 'not json at all']) {
      const refused = await call(server, reader.authorization, 'POST', '/pets', body)
      assert.equal(refused.status, 403)
      assert.equal(refused.headers.get('www-authenticate'), 'Bearer realm="animal-store", error="insufficient_scope", scope="animals:write"')
      assert.deepEqual(await refused.json(), {
        code: 'insufficient_scope',
        message: 'this API key lacks the scope animals:write, which createPet needs; create a key with it in the developer portal',
        status: 403
      })
    }
    assert.equal((await call(server, reader.authorization, 'GET', '/store/orders')).status, 501, 'orders need no scope')
    const listed = await (await call(server, server.auth.authorization, 'GET', '/pets?limit=100')).json() as unknown[]
    assert.equal(listed.length, 1, 'the refused creates created nothing')
  })

  test('a write-only key creates and gets 403 for reads, even of a page the cache holds; an invalid key gets 401 whatever the scope', async (t) => {
    const server = await startServer(t)
    const writer = await keyWith(server.store, { email: 'test@example.com', scopes: ['animals:write'] })
    assert.equal((await call(server, writer.authorization, 'POST', '/pets', PET)).status, 201)
    // The full key reads the page first, so that the cache holds it.
    assert.equal((await call(server, server.auth.authorization, 'GET', '/pets?limit=1')).status, 200)
    for (const path of ['/pets?limit=1', '/pets/1', '/pets/999']) {
      const refused = await call(server, writer.authorization, 'GET', path)
      assert.equal(refused.status, 403, path)
      assert.equal(refused.headers.get('www-authenticate'), 'Bearer realm="animal-store", error="insufficient_scope", scope="animals:read"')
    }
    assert.equal((await call(server, writer.authorization, 'HEAD', '/pets')).status, 403, 'HEAD is a read')
    assert.equal((await call(server, 'Bearer ask_invalid', 'POST', '/pets', PET)).status, 401)
    assert.equal((await call(server, writer.authorization, 'GET', '/no/such/path')).status, 404, 'an unknown path needs no scope to be told so')
  })
})

describe('expiry', () => {
  test('a key is refused from its expiry with a message that says it expired, and the first refusal is recorded once', async (t) => {
    const server = await startServer(t)
    const expiresAt = new Date(Date.now() + 1500)
    const expiring = await keyWith(server.store, { email: 'test@example.com', expiresAt })
    assert.equal((await call(server, expiring.authorization, 'GET', '/pets')).status, 200, 'it works before its expiry, and is remembered')
    await eventually(async () => assert.equal(await statusOf(call(server, expiring.authorization, 'GET', '/pets')), 401), { timeout: 5000 })
    assert.ok(Date.now() >= expiresAt.getTime(), 'refused from its expiry, not before')
    const refused = await call(server, expiring.authorization, 'POST', '/pets', PET)
    assert.equal(refused.status, 401)
    assert.equal(refused.headers.get('www-authenticate'), 'Bearer realm="animal-store", error="invalid_token", error_description="the API key expired"')
    assert.equal((await refused.json() as { message: string }).message,
      `the API key expired at ${expiresAt.toISOString()}; create or roll a key in the developer portal`)

    const account = await server.store.accounts.findByEmail('test@example.com')
    const events = await eventually(async () => {
      const page = await server.store.audit.page(account?.id ?? 0, { limit: 50 })
      assert.ok(page.some((event) => event.event === 'key_expired'), 'the expiry is in the audit trail')
      return page
    }, { timeout: 5000 })
    const expired = events.filter((event) => event.event === 'key_expired')
    assert.equal(expired.length, 1, 'recorded once however often the key is refused')
    assert.deepEqual({ actor: expired[0]?.actor, keyId: expired[0]?.keyId, address: expired[0]?.address }, { actor: 'api', keyId: expiring.id, address: '127.0.0.1' })
  })
})

describe('rolling', () => {
  test('a rolled key works beside its successor during the grace period; with grace 0 it is refused at once', async (t) => {
    const server = await startServer(t)
    const old = await keyWith(server.store, { email: 'test@example.com', label: 'dashboard', scopes: ['animals:read'] })
    assert.equal((await call(server, old.authorization, 'GET', '/pets')).status, 200)
    const withGrace = await rollApiKey(server.store, old.id, { graceMs: 3_600_000 })
    assert.deepEqual({ label: withGrace.row.label, scopes: withGrace.row.scopes }, { label: 'dashboard', scopes: ['animals:read'] })
    const successor = `Bearer ${withGrace.key}`
    assert.equal((await call(server, successor, 'GET', '/pets')).status, 200)
    assert.equal((await call(server, successor, 'POST', '/pets', PET)).status, 403, 'the same scopes')
    assert.equal((await call(server, old.authorization, 'GET', '/pets')).status, 200, 'the old key works during its grace period')

    const ended = await rollApiKey(server.store, withGrace.row.id, { graceMs: 0 })
    await eventually(async () => assert.equal(await statusOf(call(server, successor, 'GET', '/pets')), 401), { timeout: 1000 })
    assert.equal((await call(server, `Bearer ${ended.key}`, 'GET', '/pets')).status, 200)
  })
})

describe('usage and audit', () => {
  test("each key's requests are counted by operation and outcome, written when the service stops; a denied scope is recorded once an hour", async (t) => {
    const server = await startServer(t)
    const reader = await keyWith(server.store, { email: 'test@example.com', scopes: ['animals:read'] })
    for (let i = 0; i < 3; i++) await (await call(server, server.auth.authorization, 'POST', '/pets', PET)).arrayBuffer()
    await (await call(server, server.auth.authorization, 'POST', '/pets', '{}')).arrayBuffer()
    for (let i = 0; i < 5; i++) await (await call(server, reader.authorization, 'GET', '/pets')).arrayBuffer()
    await (await call(server, reader.authorization, 'GET', '/pets/999')).arrayBuffer()
    for (let i = 0; i < 4; i++) await (await call(server, reader.authorization, 'POST', '/pets', PET)).arrayBuffer()
    await (await call(server, reader.authorization, 'GET', '/nowhere')).arrayBuffer()
    await (await call(server, 'Bearer ask_unknown', 'GET', '/pets')).arrayBuffer()

    await server.app.close()
    const since = new Date(Date.now() - 2 * 3_600_000)
    const summary = async (keyId: string): Promise<Record<string, number>> => Object.fromEntries(
      (await server.store.keyUsage.forKey(keyId, since)).map((row) => [`${row.operation} ${row.outcome}`, row.count]))
    const [full] = await server.store.apiKeys.listByAccount((await server.store.accounts.findByEmail('test@example.com'))?.id ?? 0)
    assert.deepEqual(await summary(full?.id ?? ''), { 'createPet 2xx': 3, 'createPet 4xx': 1 })
    assert.deepEqual(await summary(reader.id), { 'listPets 2xx': 5, 'getPet 4xx': 1, 'createPet 4xx': 4, 'other 4xx': 1 })

    const events = await server.store.audit.page(full?.accountId ?? 0, { limit: 50 })
    const denied = events.filter((event) => event.event === 'scope_denied')
    assert.equal(denied.length, 1, 'four refusals in one hour, one event')
    assert.deepEqual({ actor: denied[0]?.actor, keyId: denied[0]?.keyId, detail: denied[0]?.detail, address: denied[0]?.address },
      { actor: 'api', keyId: reader.id, detail: 'createPet needs animals:write', address: '127.0.0.1' })
    const created = events.filter((event) => event.event === 'key_created').map((event) => event.keyId)
    assert.ok(created.includes(reader.id) && created.includes(full?.id ?? ''), 'keys made through the service are in the trail')
    assert.ok(events.every((event) => !JSON.stringify(event).includes('ask_')), 'no secret in any event')
  })

  test('a request refused by the rate limit counts under its operation', async (t) => {
    const server = await startServer(t, { RATE_LIMIT_PER_MINUTE: '2' })
    const statuses: number[] = []
    for (let i = 0; i < 3; i++) {
      const response = await call(server, server.auth.authorization, 'GET', '/pets')
      await response.arrayBuffer()
      statuses.push(response.status)
    }
    assert.deepEqual(statuses, [200, 200, 429])
    await server.app.close()
    const [key] = await server.store.apiKeys.listByAccount((await server.store.accounts.findByEmail('test@example.com'))?.id ?? 0)
    const counts = Object.fromEntries((await server.store.keyUsage.forKey(key?.id ?? '', new Date(Date.now() - 2 * 3_600_000))).map((row) => [`${row.operation} ${row.outcome}`, row.count]))
    assert.deepEqual(counts, { 'listPets 2xx': 2, 'listPets 4xx': 1 })
  })

  test('a keyed request that fails with a 5xx counts as 5xx, not 4xx', async (t) => {
    const server = await startServer(t)
    // The catalogue's table goes away under the running server: the key still verifies, the create fails.
    await onDatabase(server, 'ALTER TABLE pets RENAME TO pets_elsewhere')
    const response = await call(server, server.auth.authorization, 'POST', '/pets', PET)
    const body = await response.json() as { code: string, status: number }
    assert.ok(response.status >= 500, `a failing database is a 5xx: ${response.status} ${JSON.stringify(body)}`)
    assert.equal(body.status, response.status)
    await server.app.close()
    const [key] = await server.store.apiKeys.listByAccount((await server.store.accounts.findByEmail('test@example.com'))?.id ?? 0)
    const counts = Object.fromEntries((await server.store.keyUsage.forKey(key?.id ?? '', new Date(Date.now() - 2 * 3_600_000))).map((row) => [`${row.operation} ${row.outcome}`, row.count]))
    assert.deepEqual(counts, { 'createPet 5xx': 1 })
  })

  test('an expired key and a denied scope are each recorded once, however many instances refuse them how often', async (t) => {
    const server = await startServer(t)
    const other = await buildServedApp({ config: loadConfig(TEST_DEFAULTS), store: server.store, logger: pino({ level: 'silent' }) })
    t.after(() => other.close())
    const reader = await keyWith(server.store, { email: 'test@example.com', scopes: ['animals:read'] })
    const expired = await keyWith(server.store, { email: 'test@example.com', expiresAt: new Date(Date.now() - 60_000) })
    const hourBefore = Math.floor(Date.now() / 3_600_000)
    const statuses: number[] = []
    for (let round = 0; round < 3; round++) {
      statuses.push((await call(server, reader.authorization, 'POST', '/pets', PET)).status, (await call(server, expired.authorization, 'GET', '/pets')).status)
      for (const authorization of [reader.authorization, expired.authorization]) {
        statuses.push((await other.inject({ method: authorization === reader.authorization ? 'POST' : 'GET', url: '/v1/pets', headers: { authorization, ...json }, payload: PET })).statusCode)
      }
    }
    assert.deepEqual(statuses, Array.from({ length: 3 }, () => [403, 401, 403, 401]).flat())
    // Each instance appends without waiting for the write, and remembers what it appended: wait for both, with a deadline.
    const accountId = (await server.store.accounts.findByEmail('test@example.com'))?.id ?? 0
    const eventsOf = async (): Promise<string[]> => (await server.store.audit.page(accountId, { limit: 50 }))
      .filter((event) => event.event === 'scope_denied' || event.event === 'key_expired').map((event) => `${event.event} ${event.keyId ?? ''}`)
    const deadline = Date.now() + 10_000
    while ((await eventsOf()).length < 2 && Date.now() < deadline) await new Promise((resolve) => setImmediate(resolve))
    await server.app.close()
    await other.close()
    // A scope denied is recorded once per key and hour: the run may straddle an hour.
    const hours = new Set([hourBefore, Math.floor(Date.now() / 3_600_000)]).size
    assert.deepEqual((await eventsOf()).sort(), [`key_expired ${expired.id}`, ...Array.from({ length: hours }, () => `scope_denied ${reader.id}`)])
  })
})
