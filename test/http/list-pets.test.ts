import { describe, test } from 'node:test'
import assert from 'node:assert/strict'
import { startServer, type TestServer } from '../helpers/start-server.js'
import { buildTestApp, perSuite } from '../helpers/build-app.js'

interface Pet { id: number, name: string, categoryId: number, status?: string }

async function createPets (server: TestServer, pets: Array<Omit<Pet, 'id'>>): Promise<Pet[]> {
  const created: Pet[] = []
  for (const pet of pets) {
    const response = await fetch(`${server.baseUrl}/v1/pets`, {
      method: 'POST',
      headers: { ...server.auth, 'content-type': 'application/json' },
      body: JSON.stringify(pet)
    })
    assert.equal(response.status, 201, await response.clone().text())
    created.push(await response.json() as Pet)
  }
  return created
}

function nextUrl (response: Response, baseUrl: string): string | undefined {
  const link = response.headers.get('link')
  if (link === null) return undefined
  const match = /^<([^>]+)>; rel="next"$/.exec(link)
  assert.ok(match?.[1], `malformed Link header: ${link}`)
  return new URL(match[1], baseUrl).toString()
}

async function getJson (server: TestServer, url: string): Promise<{ response: Response, body: unknown }> {
  const response = await fetch(url, { headers: server.auth })
  return { response, body: await response.json() }
}

const STATUSES = ['available', 'pending', 'sold', undefined] as const

describe('listPets', () => {
  describe('happy', () => {
    test('returns an empty array on an empty catalogue, without Link', async (t) => {
      const server = await startServer(t)
      const { response, body } = await getJson(server, `${server.baseUrl}/v1/pets`)
      assert.equal(response.status, 200)
      assert.match(response.headers.get('content-type') ?? '', /^application\/json/)
      assert.deepEqual(body, [])
      assert.equal(response.headers.get('link'), null)
    })

    test('defaults to 20 animals ordered by id ascending', async (t) => {
      const server = await startServer(t)
      await createPets(server, Array.from({ length: 25 }, (_, i) => ({ name: `pet ${i}`, categoryId: i })))
      const { response, body } = await getJson(server, `${server.baseUrl}/v1/pets`)
      const pets = body as Pet[]
      assert.equal(pets.length, 20)
      assert.deepEqual(pets.map((pet) => pet.id), Array.from({ length: 20 }, (_, i) => i + 1))
      assert.ok(response.headers.get('link'))
    })

    test('following next links visits every animal of a status exactly once, in order', async (t) => {
      const server = await startServer(t)
      const created = await createPets(server, Array.from({ length: 23 }, (_, i) => ({
        name: `pet ${i}`, categoryId: 7, ...(STATUSES[i % 4] && { status: STATUSES[i % 4] })
      })))
      for (const status of STATUSES) {
        const expected = created.filter((pet) => pet.status === status || status === undefined).map((pet) => pet.id)
        const seen: number[] = []
        let url: string | undefined = `${server.baseUrl}/v1/pets?limit=2${status ? `&status=${status}` : ''}`
        let pages = 0
        while (url !== undefined) {
          const { response, body } = await getJson(server, url)
          assert.equal(response.status, 200)
          const pets = body as Pet[]
          assert.ok(pets.length <= 2)
          if (status) assert.ok(pets.every((pet) => pet.status === status))
          seen.push(...pets.map((pet) => pet.id))
          url = nextUrl(response, server.baseUrl)
          assert.ok(++pages < 50, 'paging does not terminate')
        }
        assert.deepEqual(seen, expected, `status ${status}`)
      }
    })

    test('animals added while paging appear exactly once when paging reaches them', async (t) => {
      const server = await startServer(t)
      await createPets(server, Array.from({ length: 5 }, (_, i) => ({ name: `first ${i}`, categoryId: 1 })))
      const seen: number[] = []
      let url: string | undefined = `${server.baseUrl}/v1/pets?limit=2`
      let added = false
      while (url !== undefined) {
        const { response, body } = await getJson(server, url)
        seen.push(...(body as Pet[]).map((pet) => pet.id))
        if (!added) {
          await createPets(server, [{ name: 'late 1', categoryId: 1 }, { name: 'late 2', categoryId: 1 }])
          added = true
        }
        url = nextUrl(response, server.baseUrl)
      }
      assert.deepEqual(seen, [1, 2, 3, 4, 5, 6, 7])
    })

    test('a page that was the tail gets a next link once more animals exist', async (t) => {
      const server = await startServer(t)
      await createPets(server, [{ name: 'a', categoryId: 1 }, { name: 'b', categoryId: 1 }])
      const first = await getJson(server, `${server.baseUrl}/v1/pets?limit=2`)
      assert.equal(first.response.headers.get('link'), null)
      await createPets(server, [{ name: 'c', categoryId: 1 }])
      const again = await getJson(server, `${server.baseUrl}/v1/pets?limit=2`)
      assert.deepEqual((again.body as Pet[]).map((pet) => pet.id), [1, 2])
      const next = nextUrl(again.response, server.baseUrl)
      assert.ok(next)
      assert.deepEqual(((await getJson(server, next)).body as Pet[]).map((pet) => pet.name), ['c'])
    })

    test('limit=100 is allowed and the Link keeps limit and status', async (t) => {
      const server = await startServer(t)
      await createPets(server, [{ name: 'a', categoryId: 1, status: 'sold' }, { name: 'b', categoryId: 1, status: 'sold' }])
      const { response } = await getJson(server, `${server.baseUrl}/v1/pets?limit=1&status=sold`)
      assert.match(response.headers.get('link') ?? '', /^<\/v1\/pets\?limit=1&status=sold&cursor=[^>]+>; rel="next"$/)
      assert.equal((await getJson(server, `${server.baseUrl}/v1/pets?limit=100`)).response.status, 200)
    })

    test('a full page carries a strong ETag and answers If-None-Match with 304', async (t) => {
      const server = await startServer(t)
      await createPets(server, [{ name: 'a', categoryId: 1 }, { name: 'b', categoryId: 1 }])
      const { response } = await getJson(server, `${server.baseUrl}/v1/pets?limit=2`)
      const etag = response.headers.get('etag')
      assert.match(etag ?? '', /^"[A-Za-z0-9_-]+"$/)
      const revalidated = await fetch(`${server.baseUrl}/v1/pets?limit=2`, { headers: { ...server.auth, 'if-none-match': etag ?? '' } })
      assert.equal(revalidated.status, 304)
      assert.equal(await revalidated.text(), '')
      assert.ok([null, '0'].includes(revalidated.headers.get('content-length')), `304 announces ${revalidated.headers.get('content-length')} bytes`)
      const tail = await getJson(server, `${server.baseUrl}/v1/pets?limit=3`)
      assert.equal(tail.response.headers.get('etag'), null, 'a short page can still change: no ETag')
    })

    test('unknown query parameters are ignored', async (t) => {
      const { app, auth } = await buildTestApp(t)
      const response = await app.inject({ url: '/v1/pets?foo=bar&foo=baz', headers: auth })
      assert.equal(response.statusCode, 200, response.body)
    })
  })

  describe('error', () => {
    // Refusals depend on the query alone, not on the catalogue: one server for all.
    const shared = perSuite(async (scope) => await startServer(scope))

    const invalid: Array<[string, RegExp]> = [
      ['limit=0', /limit/],
      ['limit=101', /limit must be at most 100/],
      ['limit=', /limit/],
      ['limit=abc', /limit/],
      ['limit=1.5', /limit/],
      ['limit=-1', /limit/],
      ['limit=01', /limit/],
      ['limit=%2020', /limit/],
      ['limit=1e1', /limit/],
      ['limit=0x10', /limit/],
      ['limit=99999999999999999999999', /limit must be at most 100/],
      ['limit=5&limit=6', /limit must be given at most once/],
      ['status=lost', /status must be one of available, pending, sold/],
      ['status=', /status must be one of/],
      ['status=SOLD', /status must be one of/],
      ['status=sold&status=sold', /status must be given at most once/],
      ['cursor=', /cursor/],
      ['cursor=garbage', /cursor/],
      ['cursor=a&cursor=b', /cursor must be given at most once/]
    ]
    for (const [query, message] of invalid) {
      test(`returns 400 invalid_request naming the parameter for ${query}`, async () => {
        const { app, auth } = await shared()
        const response = await app.inject({ url: `/v1/pets?${query}`, headers: auth })
        assert.equal(response.statusCode, 400, response.body)
        const body = response.json<{ code: string, message: string, status: number }>()
        assert.deepEqual(Object.keys(body).sort(), ['code', 'message', 'status'])
        assert.equal(body.code, 'invalid_request')
        assert.equal(body.status, 400)
        assert.match(body.message, message)
      })
    }

    test('returns 400 for a tampered cursor and for a cursor used with another status', async () => {
      const server = await shared()
      await createPets(server, [{ name: 'a', categoryId: 1, status: 'sold' }, { name: 'b', categoryId: 1, status: 'sold' }])
      const { response } = await getJson(server, `${server.baseUrl}/v1/pets?limit=1&status=sold`)
      const next = nextUrl(response, server.baseUrl) ?? ''
      const cursor = new URL(next).searchParams.get('cursor') ?? ''
      const tampered = cursor.slice(0, 2) + (cursor[2] === 'A' ? 'B' : 'A') + cursor.slice(3)
      for (const query of [`cursor=${tampered}&status=sold`, `cursor=${cursor}&status=pending`, `cursor=${cursor}`]) {
        const bad = await fetch(`${server.baseUrl}/v1/pets?${query}`, { headers: server.auth })
        assert.equal(bad.status, 400, query)
        const body = await bad.json() as { code: string, message: string }
        assert.equal(body.code, 'invalid_request')
        assert.match(body.message, /cursor/)
      }
    })
  })
})
