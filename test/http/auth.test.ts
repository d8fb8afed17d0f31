import type { AddressInfo } from 'node:net'
import { describe, test } from 'node:test'
import assert from 'node:assert/strict'
import { pino } from 'pino'
import { loadConfig } from '../../src/config.js'
import { generateApiKey } from '../../src/core/api-keys.js'
import { createAccount, createApiKey } from '../../src/services/accounts.js'
import { openPostgresStore } from '../../src/storage/postgres/postgres-store.js'
import { openSqliteStore } from '../../src/storage/sqlite/sqlite-store.js'
import { buildTestApp, perSuite, TEST_DEFAULTS, TEST_ENGINE, buildServedApp } from '../helpers/build-app.js'
import { startServer, type TestServer } from '../helpers/start-server.js'

const CHALLENGE = 'Bearer realm="animal-store"'
const INVALID_TOKEN_CHALLENGE = 'Bearer realm="animal-store", error="invalid_token"'

interface Route {
  method: string
  path: string
  /** A body the route would accept, for POST. */
  body?: string
  /** What the route answers once authenticated on an empty catalogue. */
  authenticatedStatus: number
}

const ROUTES: Route[] = [
  { method: 'GET', path: '/v1/pets', authenticatedStatus: 200 },
  { method: 'POST', path: '/v1/pets', body: JSON.stringify({ name: 'Rex', categoryId: 1 }), authenticatedStatus: 201 },
  { method: 'GET', path: '/v1/pets/1', authenticatedStatus: 404 },
  { method: 'GET', path: '/v1/store/orders', authenticatedStatus: 501 },
  { method: 'GET', path: '/v1/nope', authenticatedStatus: 404 },
  { method: 'DELETE', path: '/v1/pets', authenticatedStatus: 405 }
]

async function send (server: TestServer, route: Route, authorization: string | undefined): Promise<Response> {
  const headers: Record<string, string> = {}
  if (authorization !== undefined) headers.authorization = authorization
  if (route.body !== undefined) headers['content-type'] = 'application/json'
  return fetch(`${server.baseUrl}${route.path}`, { method: route.method, headers, body: route.body })
}

/** Asserts a 401 with exactly {code, message, status} and the given challenge. */
async function assertUnauthorized (response: Response, challenge: string): Promise<void> {
  const text = await response.text()
  assert.equal(response.status, 401, text)
  assert.match(response.headers.get('content-type') ?? '', /^application\/json/, text)
  assert.equal(response.headers.get('www-authenticate'), challenge, text)
  const body = JSON.parse(text) as { message: unknown }
  assert.equal(typeof body.message, 'string', text)
  assert.ok((body.message as string).length > 0, text)
  assert.deepEqual(body, { code: 'unauthorized', message: body.message, status: 401 }, text)
}

/** A key that was issued and then revoked before it was ever used. */
async function revokedKey (server: TestServer): Promise<string> {
  const { key, row } = await createApiKey(server.store, { email: 'test@example.com', label: 'to revoke' })
  assert.equal(await server.store.apiKeys.revoke(row.id), 'revoked')
  return key
}

describe('authentication', () => {
  // A key revoked by one test changes no other's answer, nor does a refused request: one server for
  // every test that reads, and one for the creates, so that GET /v1/pets/1 still finds no animal.
  const reading = perSuite(async (scope) => await startServer(scope))
  const creating = perSuite(async (scope) => await startServer(scope))

  for (const route of ROUTES) {
    describe(`${route.method} ${route.path}`, () => {
      const shared = route.method === 'POST' ? creating : reading

      describe('security', () => {
        test('returns 401 unauthorized with a plain Bearer challenge when no Authorization header is sent', async () => {
          const server = await shared()
          await assertUnauthorized(await send(server, route, undefined), CHALLENGE)
        })

        test('returns 401 unauthorized with a plain Bearer challenge when the scheme is Basic', async () => {
          const server = await shared()
          const basic = `Basic ${Buffer.from(`user:${server.key}`).toString('base64')}`
          await assertUnauthorized(await send(server, route, basic), CHALLENGE)
        })

        test('returns 401 invalid_token for a well-formed key that was never issued', async () => {
          const server = await shared()
          await assertUnauthorized(await send(server, route, `Bearer ${generateApiKey().key}`), INVALID_TOKEN_CHALLENGE)
        })

        test('returns 401 invalid_token for malformed keys', async () => {
          const server = await shared()
          const lastChar = server.key.at(-1) === 'A' ? 'B' : 'A'
          const malformed = [
            'not-a-key',
            'ask_123',
            server.key.slice(0, -1) + lastChar, // wrong checksum
            server.key + 'x',
            `${server.key} extra`
          ]
          for (const token of malformed) {
            await assertUnauthorized(await send(server, route, `Bearer ${token}`), INVALID_TOKEN_CHALLENGE)
          }
        })

        test('returns 401 invalid_token for an empty bearer token', async () => {
          const server = await shared()
          await assertUnauthorized(await send(server, route, 'Bearer'), INVALID_TOKEN_CHALLENGE)
        })

        test('returns 401 invalid_token for a revoked key', async () => {
          const server = await shared()
          await assertUnauthorized(await send(server, route, `Bearer ${await revokedKey(server)}`), INVALID_TOKEN_CHALLENGE)
        })
      })

      describe('happy', () => {
        for (const scheme of ['Bearer', 'bearer', 'BEARER']) {
          test(`accepts a valid key with the scheme written ${scheme}`, async () => {
            const server = await shared()
            const response = await send(server, route, `${scheme} ${server.key}`)
            assert.equal(response.status, route.authenticatedStatus, await response.text())
            assert.equal(response.headers.get('www-authenticate'), null)
          })
        }
      })
    })
  }

  describe('authentication comes first', () => {
    const post: Route = { method: 'POST', path: '/v1/pets', authenticatedStatus: 201 }
    const cases: Array<[string, Record<string, string>, string]> = [
      ['an invalid body', { 'content-type': 'application/json' }, '{"name": 5, "id": "x"'],
      ['a wrong content type', { 'content-type': 'text/plain' }, 'name=Rex'],
      ['an oversized body', { 'content-type': 'application/json' }, JSON.stringify({ name: 'x'.repeat(70_000), categoryId: 1 })]
    ]
    for (const [what, headers, body] of cases) {
      test(`returns 401 to POST /v1/pets without a key and with ${what}`, async () => {
        const server = await reading()
        const response = await fetch(`${server.baseUrl}${post.path}`, { method: 'POST', headers, body })
        await assertUnauthorized(response, CHALLENGE)
      })
    }

    test('returns 401 invalid_token to POST /v1/pets with an unknown key and an invalid body', async () => {
      const server = await reading()
      const response = await fetch(`${server.baseUrl}/v1/pets`, {
        method: 'POST',
        headers: { authorization: `Bearer ${generateApiKey().key}`, 'content-type': 'text/plain' },
        body: 'not json'
      })
      await assertUnauthorized(response, INVALID_TOKEN_CHALLENGE)
    })
  })

  describe('public routes', () => {
    test('serves GET /v1/openapi.json without a key', async () => {
      const server = await reading()
      const response = await fetch(`${server.baseUrl}/v1/openapi.json`)
      const text = await response.text()
      assert.equal(response.status, 200, text)
      assert.match(response.headers.get('content-type') ?? '', /^application\/json/)
      assert.equal((JSON.parse(text) as { openapi: string }).openapi, '3.1.0')
    })

    test('serves the /docs reference page without a key', async () => {
      const server = await reading()
      const response = await fetch(`${server.baseUrl}/docs`)
      const text = await response.text()
      assert.equal(response.status, 200, text)
      assert.match(response.headers.get('content-type') ?? '', /^text\/html/)
    })
  })

  describe('key verification', () => {
    test('refuses a key within 1 second of its revocation in the store, although the key was verified before', { timeout: 30_000 }, async (t) => {
      const server = await startServer(t)
      const { key, row } = await createApiKey(server.store, { email: 'test@example.com', label: 'cached' })
      const auth = { authorization: `Bearer ${key}` }
      for (let i = 0; i < 3; i++) {
        const response = await fetch(`${server.baseUrl}/v1/pets`, { headers: auth })
        assert.equal(response.status, 200, await response.text())
      }

      assert.equal(await server.store.apiKeys.revoke(row.id), 'revoked')
      const revokedAt = performance.now()
      let refusedAfter: number | undefined
      let last: Response | undefined
      while (performance.now() - revokedAt < 1000) {
        last = await fetch(`${server.baseUrl}/v1/pets`, { headers: auth })
        if (last.status === 401) {
          refusedAfter = performance.now() - revokedAt
          break
        }
        assert.equal(last.status, 200, await last.text())
      }
      assert.ok(refusedAfter !== undefined && refusedAfter < 1000, `the revoked key was still accepted 1000 ms after the revocation (last status ${last?.status})`)
      await assertUnauthorized(last as Response, INVALID_TOKEN_CHALLENGE)
    })

    test('a revocation reaches another instance within 1 second, which forgets that key alone: the keys it verified before stay cached', { timeout: 30_000 }, async (t) => {
      const first = await startServer(t)
      // A second instance with a store of its own on the same database, as a second process has.
      const secondStore = TEST_ENGINE === 'postgres'
        ? openPostgresStore(first.databaseUrl, { poolSize: 2, onError: () => {} })
        : openSqliteStore(first.dbPath)
      t.after(() => secondStore.close())
      let lookups = 0
      const counted = { ...secondStore, apiKeys: { ...secondStore.apiKeys, findByHash: async (hash: string) => { lookups++; return await secondStore.apiKeys.findByHash(hash) } } }
      const second = await buildServedApp({ config: loadConfig(TEST_DEFAULTS), store: counted, logger: pino({ level: 'silent' }) })
      t.after(() => second.close())
      await second.listen({ host: '127.0.0.1', port: 0 })
      const secondUrl = `http://127.0.0.1:${(second.server.address() as AddressInfo).port}`

      await createAccount(first.store, { email: 'churn@example.com' })
      const kept = await createApiKey(first.store, { email: 'test@example.com', label: 'kept' })
      const doomed = await createApiKey(first.store, { email: 'test@example.com', label: 'doomed' })
      const get = async (key: string): Promise<number> => (await fetch(`${secondUrl}/v1/pets?limit=1`, { headers: { authorization: `Bearer ${key}` } })).status
      assert.equal(await get(kept.key), 200)
      assert.equal(await get(doomed.key), 200)
      assert.equal(lookups, 2, 'each key was looked up once')
      assert.equal(await get(kept.key), 200)
      assert.equal(lookups, 2, 'and then served from the cache')

      // Keys of another account come and go meanwhile: each revocation moves the shared marker.
      for (let i = 0; i < 3; i++) {
        const other = await createApiKey(first.store, { email: 'churn@example.com' })
        assert.equal(await first.store.apiKeys.revoke(other.row.id), 'revoked')
      }
      assert.equal(await first.store.apiKeys.revoke(doomed.row.id), 'revoked')
      const revokedAt = performance.now()
      let status = 200
      while (status === 200 && performance.now() - revokedAt < 2000) {
        status = await get(doomed.key)
        if (status === 200) await new Promise((resolve) => setTimeout(resolve, 10))
      }
      assert.equal(status, 401, 'the revoked key is refused by the other instance')
      assert.ok(performance.now() - revokedAt < 1000, `refused after ${Math.round(performance.now() - revokedAt)} ms`)
      const before = lookups
      for (let i = 0; i < 5; i++) assert.equal(await get(kept.key), 200)
      assert.equal(lookups, before, 'the key that was not revoked is still answered from the cache')
    })

    test('writes the last-used time of a key when the app closes', async (t) => {
      const { app, store, auth } = await buildTestApp(t)
      const account = await store.accounts.findByEmail('test@example.com')
      assert.ok(account)
      const before = Date.now()
      const response = await app.inject({ url: '/v1/pets', headers: auth })
      assert.equal(response.statusCode, 200, response.body)
      await app.close()
      const after = Date.now()
      const [row] = await store.apiKeys.listByAccount(account.id)
      assert.ok(row?.lastUsedAt, `lastUsedAt was not written: ${JSON.stringify(row)}`)
      const usedAt = row.lastUsedAt.getTime()
      assert.ok(usedAt >= before && usedAt <= after, `lastUsedAt ${row.lastUsedAt.toISOString()} is outside the request window`)
    })

    test('leaves the last-used time of an unused key empty', async (t) => {
      const { app, store } = await buildTestApp(t)
      const account = await store.accounts.findByEmail('test@example.com')
      assert.ok(account)
      await app.close()
      const rows = await store.apiKeys.listByAccount(account.id)
      assert.deepEqual(rows.map((row) => row.lastUsedAt), [null])
    })
  })
})
