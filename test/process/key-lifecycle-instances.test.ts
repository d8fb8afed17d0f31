import { test } from 'node:test'
import assert from 'node:assert/strict'
import { createAccount, createApiKey, rollApiKey } from '../../src/services/accounts.js'
import { openPostgresStore } from '../../src/storage/postgres/postgres-store.js'
import { createTestSchema, postgresAvailable } from '../helpers/postgres.js'
import { eventually, statusOf } from '../helpers/eventually.js'
import { launchServer } from '../helpers/server-process.js'

const PET = JSON.stringify({ name: 'Rex', categoryId: 1 })

/** Repeats the request until it is refused with 401, for at most `timeout` ms; resolves with how many answers came before. */
async function answersBefore401 (request: () => Promise<Response>, timeout: number): Promise<number> {
  let before = 0
  await eventually(async () => {
    const status = await statusOf(request())
    if (status !== 401) before++
    assert.equal(status, 401)
  }, { timeout, interval: 0 })
  return before
}

test('two instances on one PostgreSQL database: usage summed across both, an expiry and a roll honoured by both within 1 s, a 403 from both', { timeout: 120_000 }, async (t) => {
  if (!await postgresAvailable()) {
    t.skip('PostgreSQL is not reachable')
    return
  }
  const databaseUrl = await createTestSchema(t)
  const store = openPostgresStore(databaseUrl, { poolSize: 2, onError: () => {} })
  t.after(() => store.close())
  await store.migrate()
  await createAccount(store, { email: 'ops@example.com' })
  const reader = await createApiKey(store, { email: 'ops@example.com', label: 'dashboard', scopes: ['animals:read'] })
  const full = await createApiKey(store, { email: 'ops@example.com' })

  const env = { PATH: process.env.PATH ?? '', DATABASE_URL: databaseUrl, LOG_LEVEL: 'info' }
  const servers = [launchServer(t, env), launchServer(t, env)]
  const urls = await Promise.all(servers.map(async (server) => await server.listening))
  const send = async (url: string, key: string, method: 'GET' | 'POST', path: string): Promise<Response> =>
    await fetch(`${url}/v1${path}`, { method, headers: { authorization: `Bearer ${key}`, 'content-type': 'application/json' }, body: method === 'POST' ? PET : undefined })

  for (const url of urls) {
    for (let i = 0; i < 3; i++) assert.equal((await send(url, full.key, 'POST', '/pets')).status, 201)
    for (let i = 0; i < 7; i++) assert.equal((await send(url, reader.key, 'GET', '/pets')).status, 200)
    const refused = await send(url, reader.key, 'POST', '/pets')
    assert.equal(refused.status, 403, `${url} refuses a create with a read-only key`)
    assert.equal(refused.headers.get('www-authenticate'), 'Bearer realm="animal-store", error="insufficient_scope", scope="animals:write"')
  }

  // Made once both instances serve, so that its few seconds are not spent starting them on a busy host.
  const expiresAt = new Date(Date.now() + 4000)
  const expiring = await createApiKey(store, { email: 'ops@example.com', expiresAt })
  for (const url of urls) assert.equal((await send(url, expiring.key, 'GET', '/pets')).status, 200, 'the expiring key works before its expiry, and each instance remembers it')

  await Promise.all(urls.map(async (url) => await answersBefore401(async () => await send(url, expiring.key, 'GET', '/pets'), 8000)))
  const late = Date.now() - expiresAt.getTime()
  assert.ok(late < 1000, `both instances refuse the key within 1 s of its expiry (the last ${late} ms after)`)

  const rolled = await rollApiKey(store, reader.row.id, { graceMs: 0 })
  const rolledAt = Date.now()
  const readsDuringRoll = await Promise.all(urls.map(async (url) => await answersBefore401(async () => await send(url, reader.key, 'GET', '/pets'), 1000)))
  assert.ok(Date.now() - rolledAt < 1000, `a roll with grace 0 reached both instances in ${Date.now() - rolledAt} ms`)
  for (const url of urls) assert.equal((await send(url, rolled.key, 'GET', '/pets')).status, 200)

  // SIGTERM: each instance writes what it counted as it stops.
  for (const server of servers) server.child.kill('SIGTERM')
  for (const server of servers) assert.equal((await server.exited).code, 0, server.stderr())
  const since = new Date(Date.now() - 2 * 3_600_000)
  const sums = async (keyId: string): Promise<Record<string, number>> => {
    const totals: Record<string, number> = {}
    for (const row of await store.keyUsage.forKey(keyId, since)) totals[`${row.operation} ${row.outcome}`] = (totals[`${row.operation} ${row.outcome}`] ?? 0) + row.count
    return totals
  }
  assert.deepEqual(await sums(full.row.id), { 'createPet 2xx': 6 }, 'three creates on each instance')
  const readerSums = await sums(reader.row.id)
  assert.deepEqual({ list: readerSums['listPets 2xx'], denied: readerSums['createPet 4xx'] }, { list: 14 + readsDuringRoll[0]! + readsDuringRoll[1]!, denied: 2 },
    'seven reads and one refusal on each instance, and the reads answered while the roll reached them')
})
