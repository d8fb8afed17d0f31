import { describe, test } from 'node:test'
import assert from 'node:assert/strict'
import { buildTestApp, perSuite, type TestApp } from '../helpers/build-app.js'
import { assertError, type HttpResponse } from '../helpers/api-responses.js'

interface Pet { id: number, name: string, categoryId: number, status?: string }

/** docs/decisions.md: every getPet response, errors included, announces the deprecation. */
function assertDeprecated (response: HttpResponse): void {
  const context = `${response.statusCode} ${JSON.stringify(response.headers)} ${response.body}`
  assert.equal(response.headers.deprecation, '@1764892800', context)
  assert.equal(response.headers.sunset, 'Thu, 05 Dec 2030 00:00:00 GMT', context)
  assert.equal(response.headers.link, '</v1/pets>; rel="successor-version"', context)
}

async function createPet (testApp: TestApp, pet: Omit<Pet, 'id'>): Promise<Pet> {
  const response = await testApp.app.inject({ method: 'POST', url: '/v1/pets', headers: testApp.auth, payload: pet })
  assert.equal(response.statusCode, 201, response.body)
  return response.json<Pet>()
}

describe('getPet', () => {
  describe('happy', () => {
    // Each test reads only the animals it created: one app for all.
    const shared = perSuite(async (scope) => await buildTestApp(scope))

    test('returns 200 with the animal as created, with Deprecation, Sunset and successor Link', async () => {
      const testApp = await shared()
      const first = await createPet(testApp, { name: 'first', categoryId: 1 })
      const created = await createPet(testApp, { name: 'Rex', categoryId: 42, status: 'pending' })
      assert.equal(created.id, first.id + 1)
      const response = await testApp.app.inject({ url: `/v1/pets/${created.id}`, headers: testApp.auth })
      assert.equal(response.statusCode, 200, response.body)
      assert.match(String(response.headers['content-type']), /^application\/json/)
      assert.deepEqual(response.json(), { id: created.id, name: 'Rex', categoryId: 42, status: 'pending' }, response.body)
      assertDeprecated(response)
    })

    test('returns an animal created without status with no status field', async () => {
      const testApp = await shared()
      const created = await createPet(testApp, { name: 'Rex', categoryId: 1 })
      const response = await testApp.app.inject({ url: `/v1/pets/${created.id}`, headers: testApp.auth })
      assert.equal(response.statusCode, 200, response.body)
      assert.deepEqual(response.json(), { id: created.id, name: 'Rex', categoryId: 1 }, response.body)
      assertDeprecated(response)
    })

    test('announces the length of a name outside ASCII in bytes, from the cache as from the database', async () => {
      const testApp = await shared()
      const created = await createPet(testApp, { name: 'Café Ünter 🐕', categoryId: 1 })
      for (const read of ['first read', 'cached read']) {
        const response = await testApp.app.inject({ url: `/v1/pets/${created.id}`, headers: testApp.auth })
        assert.equal(response.statusCode, 200, read)
        assert.equal(Number(response.headers['content-length']), Buffer.byteLength(response.body), read)
        assert.equal(response.json<Pet>().name, 'Café Ünter 🐕', read)
      }
    })

    test('answers HEAD like GET, without a body and with the deprecation headers', async () => {
      const testApp = await shared()
      const created = await createPet(testApp, { name: 'Rex', categoryId: 1 })
      const get = await testApp.app.inject({ url: `/v1/pets/${created.id}`, headers: testApp.auth })
      const head = await testApp.app.inject({ method: 'HEAD', url: `/v1/pets/${created.id}`, headers: testApp.auth })
      assert.equal(head.statusCode, 200, head.body)
      assert.equal(head.body, '')
      assert.equal(head.headers['content-type'], get.headers['content-type'])
      assert.equal(head.headers['content-length'], get.headers['content-length'])
      assertDeprecated(head)
    })
  })

  describe('error', () => {
    // The tests here are refused, and create at most one animal each: one app for all.
    const shared = perSuite(async (scope) => await buildTestApp(scope))

    test('returns 404 not_found naming the id for an unknown id, with the deprecation headers', async () => {
      const testApp = await shared()
      await createPet(testApp, { name: 'Rex', categoryId: 1 })
      const response = await testApp.app.inject({ url: '/v1/pets/12345', headers: testApp.auth })
      assertError(response, 404, 'not_found', /12345/)
      assertDeprecated(response)
    })

    for (const petId of ['9223372036854775807', '9007199254740993']) {
      test(`returns 404 not_found for petId ${petId}, inside int64 but never assigned`, async () => {
        const testApp = await shared()
        const response = await testApp.app.inject({ url: `/v1/pets/${petId}`, headers: testApp.auth })
        assertError(response, 404, 'not_found', /id/)
        assertDeprecated(response)
      })
    }

    const invalidIds = ['abc', '0', '-1', '01', '00', '1.5', '1e3', '+1', '0x10', '%201', '1%20', '9223372036854775808', '99999999999999999999']
    for (const petId of invalidIds) {
      test(`returns 400 invalid_request naming petId when petId=${petId}`, async () => {
        const testApp = await shared()
        await createPet(testApp, { name: 'Rex', categoryId: 1 })
        const response = await testApp.app.inject({ url: `/v1/pets/${petId}`, headers: testApp.auth })
        assertError(response, 400, 'invalid_request', /^path parameter petId must be an integer from 1 to 9223372036854775807/)
        assertDeprecated(response)
      })
    }

    test('returns 401 with the deprecation headers when the key is missing or invalid', async () => {
      const testApp = await shared()
      const missing = await testApp.app.inject({ url: '/v1/pets/1' })
      assertError(missing, 401, 'unauthorized', /API key/)
      assert.equal(missing.headers['www-authenticate'], 'Bearer realm="animal-store"')
      assertDeprecated(missing)

      const invalid = await testApp.app.inject({ url: '/v1/pets/1', headers: { authorization: 'Bearer ask_not-a-key' } })
      assertError(invalid, 401, 'unauthorized', /API key/)
      assert.equal(invalid.headers['www-authenticate'], 'Bearer realm="animal-store", error="invalid_token"')
      assertDeprecated(invalid)
    })

    test('returns 401, not 400, for an invalid petId without a key', async () => {
      const testApp = await shared()
      const response = await testApp.app.inject({ url: '/v1/pets/abc' })
      assertError(response, 401, 'unauthorized', /API key/)
      assertDeprecated(response)
    })
  })
})
