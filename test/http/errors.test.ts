import { describe, test } from 'node:test'
import assert from 'node:assert/strict'
import type { InjectOptions } from 'fastify'
import { buildTestApp, perSuite, type TestApp } from '../helpers/build-app.js'
import { startServer } from '../helpers/start-server.js'
import { assertError, sendRaw } from '../helpers/api-responses.js'

const REQUEST_ID = /^[A-Za-z0-9._:-]{1,128}$/
const PETS_ALLOW = 'GET, POST, HEAD, OPTIONS'
const READ_ONLY_ALLOW = 'GET, HEAD, OPTIONS'

/** Methods a path does not serve, with the Allow header its 405 must carry. */
const WRONG_METHODS: Array<[string, string, string]> = [
  ['PUT', '/v1/pets', PETS_ALLOW],
  ['PATCH', '/v1/pets', PETS_ALLOW],
  ['DELETE', '/v1/pets', PETS_ALLOW],
  ['POST', '/v1/pets/1', READ_ONLY_ALLOW],
  ['PUT', '/v1/pets/1', READ_ONLY_ALLOW],
  ['PATCH', '/v1/pets/1', READ_ONLY_ALLOW],
  ['DELETE', '/v1/pets/1', READ_ONLY_ALLOW],
  ['POST', '/v1/store/orders', READ_ONLY_ALLOW],
  ['PUT', '/v1/store/orders', READ_ONLY_ALLOW],
  ['DELETE', '/v1/store/orders', READ_ONLY_ALLOW]
]

async function createPet (testApp: TestApp, name: string): Promise<void> {
  const response = await testApp.app.inject({ method: 'POST', url: '/v1/pets', headers: testApp.auth, payload: { name, categoryId: 1 } })
  assert.equal(response.statusCode, 201, response.body)
}

/** docs/decisions.md: nothing internal (stack, SQL, file path) ever reaches a client. */
function assertGenericMessage (message: string): void {
  assert.doesNotMatch(message, /\n|\bat \S+ \(|[/\\]|\.[cm]?[jt]s\b|sqlite|database|connection|\b(SELECT|INSERT|UPDATE|FROM|WHERE)\b|Error:|TypeError/i, message)
}

/**
 * One server for every test but those that close its store: the others are refused or create a few
 * animals, and none of their answers depends on what the catalogue holds.
 */
const shared = perSuite(async (scope) => await startServer(scope))

describe('unknown paths', () => {
  for (const path of ['/v1/nope', '/v1/pets/1/photos', '/v1/store/orders/1', '/v1/store', '/v1']) {
    test(`returns 404 not_found naming the path for GET ${path} with a valid key`, async () => {
      const { app, auth } = await shared()
      const response = await app.inject({ url: path, headers: auth })
      assertError(response, 404, 'not_found', new RegExp(`^no route matches GET ${path.replace(/\//g, '\\/')}$`))
    })
  }

  test('returns 404, not 415 or 400, for POST to an unknown path with a bad body and content type', async () => {
    const { app, auth } = await shared()
    const response = await app.inject({ method: 'POST', url: '/v1/nope', headers: { ...auth, 'content-type': 'text/plain' }, payload: '{{{' })
    assertError(response, 404, 'not_found', /\/v1\/nope/)
  })

  test('returns 404 not_found for a path outside /v1 without needing a key', async () => {
    const { app } = await shared()
    assertError(await app.inject({ url: '/nope' }), 404, 'not_found', /\/nope/)
    const post = await app.inject({ method: 'POST', url: '/nope', headers: { 'content-type': 'text/plain' }, payload: 'garbage' })
    assertError(post, 404, 'not_found', /\/nope/)
  })

  test('returns 401, not 404, for an unknown path under /v1 without a key', async () => {
    const { app } = await shared()
    const response = await app.inject({ url: '/v1/nope' })
    assertError(response, 401, 'unauthorized', /API key/)
    assert.equal(response.headers['www-authenticate'], 'Bearer realm="animal-store"')
  })
})

describe('a mistyped path', () => {
  const HINTS: Array<[string, string]> = [
    ['/v1/pet', '/v1/pets'],
    ['/v1/pest', '/v1/pets'],
    ['/v1/pets/7/', '/v1/pets/7'],
    ['/v1/store/order', '/v1/store/orders'],
    ['/v1/openapi.jsn', '/v1/openapi.json']
  ]
  for (const [path, meant] of HINTS) {
    test(`returns 404 not_found for GET ${path} with a valid key, its message suggesting ${meant}`, async () => {
      const { app, auth } = await shared()
      const response = await app.inject({ url: path, headers: auth })
      assertError(response, 404, 'not_found', new RegExp(`^no route matches GET ${path.replace(/[/.]/g, '\\$&')}; did you mean ${meant.replace(/[/.]/g, '\\$&')}\\?$`))
    })
  }

  test('outside /v1, the framework\'s 404 suggests the path under /v1, without needing a key', async () => {
    const { app } = await shared()
    assertError(await app.inject({ url: '/pets' }), 404, 'not_found', /^no route matches GET \/pets; did you mean \/v1\/pets\?$/)
    assertError(await app.inject({ url: '/pets/12?limit=5' }), 404, 'not_found', /^no route matches GET \/pets\/12; did you mean \/v1\/pets\/12\?$/)
    assertError(await app.inject({ method: 'POST', url: '/pet', headers: { 'content-type': 'application/json' }, payload: '{}' }), 404, 'not_found', /did you mean \/v1\/pets\?$/)
  })

  test('under /v1 without a key still gets 401 first', async () => {
    const { app } = await shared()
    assertError(await app.inject({ url: '/v1/pet' }), 401, 'unauthorized', /API key/)
  })
})

describe('wrong methods', () => {
  for (const [method, path, allow] of WRONG_METHODS) {
    test(`returns 405 method_not_allowed with Allow: ${allow} for ${method} ${path}`, async () => {
      const { app, auth } = await shared()
      const response = await app.inject({ method: method as InjectOptions['method'], url: path, headers: auth })
      assertError(response, 405, 'method_not_allowed', new RegExp(`^${method} is not allowed on `))
      assert.equal(response.headers.allow, allow, response.body)
    })
  }

  const badBodies: Array<[string, string, Record<string, string>, string]> = [
    ['PUT', '/v1/pets', { 'content-type': 'text/plain' }, '{{{ not json'],
    ['DELETE', '/v1/pets/1', { 'content-type': 'application/json' }, '{'],
    ['POST', '/v1/pets/1', { 'content-type': 'application/json; charset=latin1' }, '{"name":"Rex"}'],
    ['POST', '/v1/store/orders', { 'content-type': 'application/xml', 'content-encoding': 'gzip' }, '\u0000\u0001garbage'],
    ['PATCH', '/v1/pets', { 'content-type': 'text/plain' }, 'x'.repeat(70_000)]
  ]
  for (const [method, path, headers, payload] of badBodies) {
    test(`returns 405, not 415/413/400, for ${method} ${path} with a bad body sent as ${headers['content-type']}`, async () => {
      const { app, auth } = await shared()
      const response = await app.inject({ method: method as InjectOptions['method'], url: path, headers: { ...auth, ...headers }, payload })
      assertError(response, 405, 'method_not_allowed', new RegExp(`^${method} is not allowed on `))
      assert.ok(response.headers.allow, 'Allow header missing')
    })
  }

  test('returns 405 over a real socket for a chunked garbage body on a wrong method', async () => {
    const server = await shared()
    const response = await sendRaw(server.baseUrl, {
      method: 'PUT',
      path: '/v1/pets',
      headers: { ...server.auth, 'content-type': 'text/plain', 'transfer-encoding': 'chunked' },
      chunks: [Buffer.from('{{{'), Buffer.from([0xff, 0xfe]), Buffer.alloc(4096, 0x78)]
    })
    assertError(response, 405, 'method_not_allowed', /^PUT is not allowed on \/v1\/pets/)
    assert.equal(response.headers.allow, PETS_ALLOW)
  })

  test('returns 401, not 405, for a wrong method without a key', async () => {
    const { app } = await shared()
    const response = await app.inject({ method: 'DELETE', url: '/v1/pets/1' })
    assertError(response, 401, 'unauthorized', /API key/)
  })
})

describe('HEAD and OPTIONS', () => {
  for (const [path, allow] of [['/v1/pets', PETS_ALLOW], ['/v1/pets/1', READ_ONLY_ALLOW], ['/v1/store/orders', READ_ONLY_ALLOW]] as const) {
    test(`answers OPTIONS ${path} with 204 and Allow: ${allow}`, async () => {
      const { app, auth } = await shared()
      const response = await app.inject({ method: 'OPTIONS', url: path, headers: auth })
      assert.equal(response.statusCode, 204, response.body)
      assert.equal(response.headers.allow, allow)
      assert.equal(response.body, '')
    })
  }

  test('answers HEAD /v1/pets with 200, no body and the headers of GET', async () => {
    const server = await shared()
    for (const name of ['a', 'b', 'c']) await createPet(server, name)
    const volatile = new Set(['date', 'x-request-id', 'connection', 'keep-alive'])
    const stable = (headers: Headers): Array<[string, string]> => [...headers].filter(([name]) => !volatile.has(name))
    for (const query of ['', '?limit=2', '?limit=1&status=sold']) {
      const get = await fetch(`${server.baseUrl}/v1/pets${query}`, { headers: server.auth })
      const getBody = await get.text()
      assert.equal(get.status, 200, getBody)
      const head = await fetch(`${server.baseUrl}/v1/pets${query}`, { method: 'HEAD', headers: server.auth })
      assert.equal(head.status, 200)
      assert.equal(await head.text(), '')
      assert.deepEqual(stable(head.headers), stable(get.headers), `HEAD /v1/pets${query}`)
      assert.equal(head.headers.get('content-length'), String(Buffer.byteLength(getBody)))
    }
    const paged = await fetch(`${server.baseUrl}/v1/pets?limit=2`, { method: 'HEAD', headers: server.auth })
    assert.match(paged.headers.get('link') ?? '', /rel="next"/)
    assert.ok(paged.headers.get('etag'))
  })

  test('answers HEAD /v1/pets without a key with 401 and no body', async () => {
    const server = await shared()
    const head = await fetch(`${server.baseUrl}/v1/pets`, { method: 'HEAD' })
    assert.equal(head.status, 401)
    assert.equal(head.headers.get('www-authenticate'), 'Bearer realm="animal-store"')
    assert.equal(await head.text(), '')
  })
})

describe('listStoreOrders', () => {
  describe('error', () => {
    test('returns 501 not_implemented for GET /v1/store/orders', async () => {
      const { app, auth } = await shared()
      assertError(await app.inject({ url: '/v1/store/orders', headers: auth }), 501, 'not_implemented', /store orders/)
    })

    test('returns 401, not 501, for GET /v1/store/orders without a key', async () => {
      const { app } = await shared()
      assertError(await app.inject({ url: '/v1/store/orders' }), 401, 'unauthorized', /API key/)
    })
  })
})

describe('unexpected failures', () => {
  const needingTheDatabase: InjectOptions[] = [
    { method: 'POST', url: '/v1/pets', payload: { name: 'Rex', categoryId: 1 } },
    { method: 'GET', url: '/v1/pets/12345' },
    { method: 'GET', url: '/v1/pets?limit=7' }
  ]
  for (const request of needingTheDatabase) {
    test(`returns 500 internal_error with a generic message for ${request.method} ${request.url} when the store is closed`, async (t) => {
      const testApp = await buildTestApp(t)
      // A first request lets the key verifier remember the key, so the failure comes from the route itself.
      const warm = await testApp.app.inject({ url: '/v1/pets', headers: testApp.auth })
      assert.equal(warm.statusCode, 200, warm.body)
      await testApp.store.close()

      const response = await testApp.app.inject({ ...request, headers: testApp.auth })
      const body = assertError(response, 500, 'internal_error', /unexpected/)
      assertGenericMessage(body.message)
      assert.match(String(response.headers['x-request-id']), REQUEST_ID)
    })
  }

  test('returns 500 internal_error when the key cannot be checked because the store is closed', async (t) => {
    const testApp = await buildTestApp(t)
    await testApp.store.close()
    const response = await testApp.app.inject({ url: '/v1/pets', headers: testApp.auth })
    const body = assertError(response, 500, 'internal_error', /unexpected/)
    assertGenericMessage(body.message)
  })
})

describe('request ids', () => {
  test('every response carries its own x-request-id', async () => {
    const testApp = await shared()
    const { app, auth } = testApp
    await createPet(testApp, 'Rex')
    const requests: InjectOptions[] = [
      { url: '/v1/pets', headers: auth },
      { method: 'POST', url: '/v1/pets', headers: auth, payload: { name: 'Tom', categoryId: 1 } },
      { method: 'POST', url: '/v1/pets', headers: auth, payload: { name: '' } },
      { method: 'POST', url: '/v1/pets', headers: { ...auth, 'content-type': 'text/plain' }, payload: 'x' },
      { method: 'POST', url: '/v1/pets', headers: { ...auth, 'content-type': 'application/json' }, payload: ' '.repeat(70_000) },
      { url: '/v1/pets/1', headers: auth },
      { url: '/v1/pets/abc', headers: auth },
      { url: '/v1/pets/999', headers: auth },
      { url: '/v1/pets' },
      { url: '/nope' },
      { method: 'DELETE', url: '/v1/pets', headers: auth },
      { method: 'OPTIONS', url: '/v1/pets', headers: auth },
      { method: 'HEAD', url: '/v1/pets', headers: auth },
      { url: '/v1/store/orders', headers: auth }
    ]
    const seen = new Set<string>()
    for (const request of requests) {
      const response = await app.inject(request)
      const id = response.headers['x-request-id']
      assert.match(String(id), REQUEST_ID, `${request.method ?? 'GET'} ${request.url} -> ${response.statusCode}`)
      seen.add(String(id))
    }
    assert.equal(seen.size, requests.length, 'request ids repeat')
  })

  test('a chunked body refused with 413 over a real socket carries x-request-id', async () => {
    const server = await shared()
    const response = await sendRaw(server.baseUrl, {
      path: '/v1/pets',
      headers: { ...server.auth, 'content-type': 'application/json', 'transfer-encoding': 'chunked' },
      chunks: Array.from({ length: 17 }, () => Buffer.alloc(4096, 0x20))
    })
    assertError(response, 413, 'payload_too_large', /65536/)
    assert.match(String(response.headers['x-request-id']), REQUEST_ID)
  })

  test('echoes a valid X-Request-Id on success and error responses', async () => {
    const { app, auth } = await shared()
    for (const request of [{ url: '/v1/pets', headers: auth }, { url: '/v1/pets/1', headers: auth }, { url: '/v1/pets' }, { url: '/nope' }]) {
      const response = await app.inject({ ...request, headers: { ...request.headers, 'x-request-id': 'abc-123' } })
      assert.equal(response.headers['x-request-id'], 'abc-123', `${request.url} -> ${response.statusCode}`)
    }
  })

  for (const [label, given] of [['300 characters long', 'a'.repeat(300)], ['with spaces', 'abc 123'], ['with a semicolon', 'abc;123'], ['with a slash', 'abc/123']]) {
    test(`replaces an X-Request-Id ${label} with a fresh one`, async () => {
      const { app, auth } = await shared()
      const response = await app.inject({ url: '/v1/pets', headers: { ...auth, 'x-request-id': given } })
      assert.equal(response.statusCode, 200, response.body)
      const id = String(response.headers['x-request-id'])
      assert.notEqual(id, given)
      assert.match(id, REQUEST_ID)
    })
  }
})
