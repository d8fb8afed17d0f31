import { describe, test, type TestContext } from 'node:test'
import assert from 'node:assert/strict'
import {
  AnimalStoreError,
  createAnimalStoreClient,
  UNEXPECTED_RESPONSE,
  type AnimalStoreClient,
  type NewPet,
  type Pet
} from '../../client/src/index.js'
import { startServer, type TestServer } from '../helpers/start-server.js'

interface Harness {
  server: TestServer
  client: AnimalStoreClient
  /** Every request the client sent, as `METHOD path?query`. */
  requests: string[]
}

/** The client against a real server, through a fetch that records each request and tags it with a request id. */
async function setUp (t: TestContext, apiKey?: string): Promise<Harness> {
  const server = await startServer(t)
  const requests: string[] = []
  let sequence = 0
  const client = createAnimalStoreClient({
    baseUrl: `${server.baseUrl}/v1`,
    apiKey: apiKey ?? server.key,
    fetch: async (request) => {
      const url = new URL(request.url)
      requests.push(`${request.method} ${url.pathname}${url.search}`)
      request.headers.set('x-request-id', `client-test-${++sequence}`)
      return await fetch(request)
    }
  })
  return { server, client, requests }
}

async function createPets (client: AnimalStoreClient, pets: NewPet[]): Promise<Pet[]> {
  const created: Pet[] = []
  for (const pet of pets) created.push(await client.createPet(pet))
  return created
}

async function collect<T> (items: AsyncIterable<T>): Promise<T[]> {
  const all: T[] = []
  for await (const item of items) all.push(item)
  return all
}

/** Runs `action`, expecting an AnimalStoreError, and returns it. */
async function rejection (action: () => Promise<unknown>): Promise<AnimalStoreError> {
  try {
    await action()
  } catch (error) {
    assert.ok(error instanceof AnimalStoreError, `expected an AnimalStoreError, got ${String(error)}`)
    return error
  }
  assert.fail('expected the call to throw an AnimalStoreError')
}

function assertApiError (error: AnimalStoreError, expected: { code: string, status: number, message: RegExp }): void {
  const context = JSON.stringify({ code: error.code, status: error.status, message: error.message, requestId: error.requestId })
  assert.ok(error instanceof Error, context)
  assert.equal(error.name, 'AnimalStoreError', context)
  assert.equal(error.code, expected.code, context)
  assert.equal(error.status, expected.status, context)
  assert.match(error.message, expected.message, context)
  assert.match(error.requestId ?? '', /^client-test-\d+$/, context)
}

describe('client createPet', () => {
  test('creates an animal with a status and one without, which has no status field', async (t) => {
    const { client, requests } = await setUp(t)
    const rex = await client.createPet({ name: 'Rex', categoryId: 42, status: 'pending' })
    const tom = await client.createPet({ name: 'Tom', categoryId: 7 })
    assert.deepEqual(rex, { id: 1, name: 'Rex', categoryId: 42, status: 'pending' })
    assert.deepEqual(tom, { id: 2, name: 'Tom', categoryId: 7 })
    assert.equal('status' in tom, false)
    assert.deepEqual(requests, ['POST /v1/pets', 'POST /v1/pets'])
  })

  test('replays the first animal for a repeated idempotency key and refuses the key with another animal', async (t) => {
    const { client } = await setUp(t)
    const first = await client.createPet({ name: 'Rex', categoryId: 1, status: 'available' }, { idempotencyKey: 'order-17' })
    const again = await client.createPet({ name: 'Rex', categoryId: 1, status: 'available' }, { idempotencyKey: 'order-17' })
    assert.deepEqual(again, first)
    assert.deepEqual((await client.listPets({ limit: 100 })).pets, [first])

    const error = await rejection(() => client.createPet({ name: 'Tom', categoryId: 1 }, { idempotencyKey: 'order-17' }))
    assertApiError(error, { code: 'idempotency_key_reused', status: 422, message: /Idempotency-Key/ })
  })
})

describe('client int64 categoryId', () => {
  test('a categoryId beyond 2^53 round-trips exactly as a bigint through createPet, getPet, listPets and allPets; safe ones stay numbers', async (t) => {
    const { client } = await setUp(t)
    const beyond = [9007199254740993n, 9223372036854775807n, -9223372036854775808n]
    const created = await createPets(client, [...beyond.map((categoryId, index) => ({ name: `big ${index}`, categoryId })), { name: 'small', categoryId: 9007199254740991 }])
    assert.deepEqual(created.map((pet) => pet.categoryId), [...beyond, 9007199254740991])
    assert.equal(typeof created[3]?.categoryId, 'number')
    assert.equal(typeof created[0]?.id, 'number')
    for (const pet of created) {
      assert.deepEqual((await client.getPet(pet.id)).pet, pet)
    }
    assert.deepEqual((await client.listPets({ limit: 100 })).pets, created)
    assert.deepEqual(await collect(client.allPets({ limit: 1 })), created)
  })
})

describe('client listPets', () => {
  test('returns one page and the query of the next, then undefined on the last page', async (t) => {
    const { client } = await setUp(t)
    const created = await createPets(client, [
      { name: 'a', categoryId: 1 }, { name: 'b', categoryId: 2 }, { name: 'c', categoryId: 3 }
    ])
    const first = await client.listPets({ limit: 2 })
    assert.deepEqual(first.pets, created.slice(0, 2))
    assert.ok(first.next !== undefined)
    assert.equal(first.next.limit, 2)
    assert.equal(typeof first.next.cursor, 'string')
    const second = await client.listPets(first.next)
    assert.deepEqual(second.pets, created.slice(2))
    assert.equal(second.next, undefined)
  })

  test('lists with the default limit when given no query', async (t) => {
    const { client, requests } = await setUp(t)
    const created = await createPets(client, [{ name: 'a', categoryId: 1 }])
    assert.deepEqual(await client.listPets(), { pets: created, next: undefined })
    assert.equal(requests.at(-1), 'GET /v1/pets')
  })
})

describe('client allPets', () => {
  test('follows next links over several pages and yields every animal once, in id order', async (t) => {
    const { client, requests } = await setUp(t)
    const created = await createPets(client, Array.from({ length: 7 }, (_, i) => ({ name: `pet ${i}`, categoryId: i })))
    requests.length = 0
    assert.deepEqual(await collect(client.allPets({ limit: 2 })), created)
    assert.equal(requests.length, 4, requests.join('\n'))
    assert.equal(requests[0], 'GET /v1/pets?limit=2')
    for (const request of requests.slice(1)) assert.match(request, /^GET \/v1\/pets\?limit=2&cursor=[^&]+$/)
  })

  test('keeps the status filter on every page', async (t) => {
    const { client, requests } = await setUp(t)
    const statuses = ['sold', 'available', 'sold', undefined, 'sold', 'pending', 'sold', 'sold'] as const
    const created = await createPets(client, statuses.map((status, i) => ({ name: `pet ${i}`, categoryId: i, ...(status && { status }) })))
    requests.length = 0
    const sold = await collect(client.allPets({ status: 'sold', limit: 2 }))
    assert.deepEqual(sold, created.filter((pet) => pet.status === 'sold'))
    assert.equal(requests.length, 3, requests.join('\n'))
    for (const request of requests) assert.match(request, /[?&]status=sold(&|$)/)
  })

  test('yields nothing from an empty catalogue after one request', async (t) => {
    const { client, requests } = await setUp(t)
    assert.deepEqual(await collect(client.allPets({ status: 'available' })), [])
    assert.deepEqual(requests, ['GET /v1/pets?status=available'])
  })
})

describe('client getPet', () => {
  test('returns the animal with the deprecation signal parsed from Deprecation, Sunset and the successor Link', async (t) => {
    const { client, server } = await setUp(t)
    const created = await client.createPet({ name: 'Rex', categoryId: 1, status: 'sold' })
    const { pet, deprecation } = await client.getPet(created.id)
    assert.deepEqual(pet, created)
    assert.deepEqual(deprecation, {
      deprecatedAt: new Date('2025-12-05T00:00:00Z'),
      sunset: new Date('2030-12-05T00:00:00Z'),
      successor: `${server.baseUrl}/v1/pets`
    })
  })
})

describe('client construction', () => {
  test('refuses to start without a key (undefined, empty or blank), before any request', () => {
    const requests: string[] = []
    const fetch = async (request: Request): Promise<Response> => {
      requests.push(request.url)
      return new Response('{}')
    }
    for (const apiKey of [undefined, '', '  ']) {
      assert.throws(
        () => createAnimalStoreClient({ baseUrl: 'http://127.0.0.1:1/v1', apiKey: apiKey as unknown as string, fetch }),
        (error: Error) => error instanceof TypeError && /needs an apiKey/.test(error.message) && !/Bearer/.test(error.message),
        `apiKey ${JSON.stringify(apiKey)}`
      )
    }
    assert.deepEqual(requests, [], 'no request was sent')
  })
})

describe('client errors', () => {
  test('throws 400 invalid_request naming the field for an invalid body', async (t) => {
    const { client } = await setUp(t)
    assertApiError(await rejection(() => client.createPet({ name: '', categoryId: 1 })),
      { code: 'invalid_request', status: 400, message: /name/ })
    assertApiError(await rejection(() => client.createPet({ name: 'Rex', categoryId: 1.5 })),
      { code: 'invalid_request', status: 400, message: /categoryId/ })
  })

  test('throws 400 invalid_request naming limit for an out-of-range limit', async (t) => {
    const { client } = await setUp(t)
    assertApiError(await rejection(() => client.listPets({ limit: 0 })), { code: 'invalid_request', status: 400, message: /limit/ })
  })

  test('throws 401 unauthorized for a key the server does not know, on every method', async (t) => {
    const { client } = await setUp(t, 'ask_not-a-real-key')
    const expected = { code: 'unauthorized', status: 401, message: /./ }
    assertApiError(await rejection(() => client.listPets()), expected)
    assertApiError(await rejection(() => client.createPet({ name: 'Rex', categoryId: 1 })), expected)
    assertApiError(await rejection(() => client.getPet(1)), expected)
    assertApiError(await rejection(() => collect(client.allPets())), expected)
  })

  test('throws 404 not_found naming the id for an unknown animal', async (t) => {
    const { client } = await setUp(t)
    assertApiError(await rejection(() => client.getPet(404)), { code: 'not_found', status: 404, message: /404/ })
  })

  test('carries code, message, status and the X-Request-Id the server answered with', async (t) => {
    const { client } = await setUp(t)
    const error = await rejection(() => client.getPet(9))
    assert.deepEqual(
      { code: error.code, message: error.message, status: error.status, requestId: error.requestId },
      { code: 'not_found', message: 'no animal has id 9', status: 404, requestId: 'client-test-1' }
    )
  })

  test('throws unexpected_response with the status for a non-2xx response that is not an Error body', async () => {
    const client = createAnimalStoreClient({
      baseUrl: 'http://animal-store.invalid/v1',
      apiKey: 'ask_key',
      fetch: async () => new Response('<html>Bad Gateway</html>', { status: 502, headers: { 'content-type': 'text/html' } })
    })
    const error = await rejection(() => client.listPets())
    assert.equal(error.code, UNEXPECTED_RESPONSE)
    assert.equal(error.status, 502)
    assert.equal(error.requestId, undefined)
  })
})

describe('client types', () => {
  test('the document types refuse what the API refuses', () => {
    // Type-checked by `npm run typecheck`, never called: each line must be a type error.
    const refused = (client: AnimalStoreClient): unknown[] => [
      // @ts-expect-error status is one of available, pending, sold
      client.createPet({ name: 'Rex', categoryId: 1, status: 'lost' }),
      // @ts-expect-error categoryId is required
      client.createPet({ name: 'Rex' }),
      // @ts-expect-error id is assigned by the server
      client.createPet({ id: 1, name: 'Rex', categoryId: 1 }),
      // @ts-expect-error limit is a number
      client.listPets({ limit: '10' }),
      // @ts-expect-error petId is a number
      client.getPet('1'),
      // @ts-expect-error categoryId is an integer, as a number or a bigint, never a string
      client.createPet({ name: 'Rex', categoryId: '9007199254740993' })
    ]
    assert.equal(typeof refused, 'function')
  })
})
