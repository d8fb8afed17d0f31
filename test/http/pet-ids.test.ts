import { describe, test } from 'node:test'
import assert from 'node:assert/strict'
import { MAX_PET_ID } from '../../src/core/pets.js'
import { buildTestApp, type TestApp } from '../helpers/build-app.js'
import { assertError, type HttpResponse } from '../helpers/api-responses.js'
import { lastPetIdIs } from '../helpers/pet-rows.js'

async function create (testApp: TestApp, name: string): Promise<HttpResponse> {
  return await testApp.app.inject({ method: 'POST', url: '/v1/pets', headers: testApp.auth, payload: { name, categoryId: 1 } })
}

async function allIds (testApp: TestApp): Promise<string[]> {
  const response = await testApp.app.inject({ url: '/v1/pets?limit=100', headers: testApp.auth })
  assert.equal(response.statusCode, 200, response.body)
  // Read as digits: a double would hide a duplicate beyond 2^53.
  return [...response.body.matchAll(/"id":(\d+)/g)].map((match) => match[1] as string)
}

const MAX = BigInt(MAX_PET_ID)

describe('pet ids at the end of their range (1 to 2^53 − 1, docs/decisions.md)', () => {
  test('the last ids are assigned exactly and read back; beyond them createPet gets 507 and creates nothing', async (t) => {
    const testApp = await buildTestApp(t)
    await lastPetIdIs(testApp, MAX - 2n)
    const first = await create(testApp, 'penultimate')
    assert.equal(first.statusCode, 201, first.body)
    assert.match(first.body, new RegExp(`^\\{"id":${MAX - 1n},`))
    const last = await create(testApp, 'last')
    assert.equal(last.statusCode, 201, last.body)
    assert.match(last.body, new RegExp(`^\\{"id":${MAX},`))

    const refused = await create(testApp, 'one too many')
    assertError(refused, 507, 'insufficient_storage', new RegExp(`^no animal was created: every id up to ${MAX} is taken$`))
    assert.deepEqual(await allIds(testApp), [`${MAX - 2n}`, `${MAX - 1n}`, `${MAX}`])

    const read = await testApp.app.inject({ url: `/v1/pets/${MAX}`, headers: testApp.auth })
    assert.equal(read.statusCode, 200, read.body)
    assert.match(read.body, /"name":"last"/)
  })

  test('a catalogue whose last id already lies beyond the range (2^53) hands out no duplicate: 507', async (t) => {
    const testApp = await buildTestApp(t)
    await lastPetIdIs(testApp, MAX + 1n)
    assertError(await create(testApp, 'duplicate?'), 507, 'insufficient_storage', /every id up to/)
    assert.deepEqual(await allIds(testApp), [`${MAX + 1n}`])
  })

  test('getPet: an id beyond 2^53 − 1 but within int64 names no animal (404); beyond int64 is 400', async (t) => {
    const testApp = await buildTestApp(t)
    for (const petId of [`${MAX + 1n}`, `${MAX + 2n}`, '9223372036854775807']) {
      const response = await testApp.app.inject({ url: `/v1/pets/${petId}`, headers: testApp.auth })
      assertError(response, 404, 'not_found', new RegExp(`^no animal has id ${petId}$`))
    }
    const beyond = await testApp.app.inject({ url: '/v1/pets/9223372036854775808', headers: testApp.auth })
    assertError(beyond, 400, 'invalid_request', /petId/)
  })

  test('the OpenAPI document gives ids and petId the same maximum, and createPet its 507', async (t) => {
    const { app } = await buildTestApp(t)
    const document = (await app.inject({ url: '/v1/openapi.json' })).json<{
      paths: Record<string, Record<string, { parameters?: Array<{ name: string, schema: { maximum: number } }>, responses: Record<string, unknown> }>>
      components: { schemas: { Pet: { properties: { id: { maximum: number } } } } }
    }>()
    assert.equal(document.components.schemas.Pet.properties.id.maximum, MAX_PET_ID)
    const petId = document.paths['/pets/{petId}']?.get?.parameters?.find((parameter) => parameter.name === 'petId')
    assert.equal(petId?.schema.maximum, MAX_PET_ID)
    assert.ok(document.paths['/pets']?.post?.responses['507'] !== undefined, 'createPet documents 507')
  })
})
