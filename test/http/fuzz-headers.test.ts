import { describe, test } from 'node:test'
import assert from 'node:assert/strict'
import fc from 'fast-check'
import { type AuthCase, CONTENT_ENCODINGS, CONTENT_TYPES, type ContentEncodingCase, type ContentTypeCase, type CreateCase, assertNothingElseCreated, assertRoundTrip, authArbitrary, checkResponse, createBodyArbitrary, createSent, describeSent, expectCreate, fuzzApp, newPetSchemaOf, runCreateCase, runProperty, send, testPrototypesUnchanged } from '../helpers/fuzz.js'
import { perSuite } from '../helpers/build-app.js'

/* Fuzzing the Content-Type and Content-Encoding headers from the contract: the generators and oracle are in test/helpers/fuzz.ts (FUZZ_RUNS, FUZZ_SEED). */

describe('fuzzing from the OpenAPI document', () => {
  test('createPet accepts as JSON, or refuses with 415, every member of the Content-Type and Content-Encoding families; nothing reaches the handler unvalidated', async (t) => {
    const fz = await fuzzApp(t)
    const validate = fz.validator.validatorAt('paths', '/pets', 'post', 'requestBody', 'content', 'application/json', 'schema')
    assert.ok(validate)
    const newPet = (value: unknown): boolean => validate(value)
    const bodies = createBodyArbitrary(fz.doc, newPetSchemaOf(fz.doc))
    const arbitrary = fc.record({
      body: bodies,
      auth: authArbitrary(fz.key, 60),
      contentType: fc.constantFrom(...CONTENT_TYPES),
      contentEncoding: fc.oneof({ weight: 3, arbitrary: fc.constant(CONTENT_ENCODINGS[0] as ContentEncodingCase) }, { weight: 1, arbitrary: fc.constantFrom(...CONTENT_ENCODINGS) })
    })
    await runProperty(t, 'contentType', arbitrary, async (contentCase) => {
      await runCreateCase(fz, contentCase, newPet)
    })
    await assertNothingElseCreated(fz)
  })
})

describe('the Content-Type and Content-Encoding families on POST /v1/pets', () => {
  // Both tests count the animals they create (assertNothingElseCreated): one app for both.
  const shared = perSuite(fuzzApp)

  const bodies = [
    { label: 'a valid animal', text: '{"name":"Rex","categoryId":1}', status: 201 },
    { label: 'categoryId as a string', text: '{"name":"Rex","categoryId":"1"}', status: 400 },
    { label: 'an unknown field', text: '{"name":"Rex","categoryId":1,"admin":true}', status: 400 },
    { label: 'a __proto__ field', text: '{"name":"Rex","categoryId":1,"__proto__":{"polluted":true}}', status: 400 },
    { label: 'the animal form-encoded', text: 'name=Rex&categoryId=1', status: 400 },
    { label: 'malformed JSON', text: '{"name":', status: 400 }
  ]

  test('each Content-Type is either parsed and validated as JSON or refused with 415, as CONTENT_TYPES records; two of them get 400', async () => {
    const fz = await shared()
    const auth: AuthCase = { label: 'Bearer key', header: `Bearer ${fz.key}`, valid: true, challenge: 'any' }
    for (const contentType of CONTENT_TYPES) {
      for (const body of bodies) {
        const contentCase: CreateCase = { body: { label: body.label, bytes: Buffer.from(body.text) }, auth, contentType, contentEncoding: CONTENT_ENCODINGS[0] as ContentEncodingCase }
        const sent = createSent(contentCase)
        const received = await send(fz, sent)
        checkResponse(fz, sent, received, expectCreate(contentCase, { status: body.status as 201 | 400, why: body.label, pet: { name: 'Rex', categoryId: 1n } }))
        assert.equal(received.status, Array.isArray(contentType.header) ? 400 : contentType.json ? body.status : 415, describeSent(sent, received))
        if (received.status === 201) await assertRoundTrip(fz, sent, received, { name: 'Rex', categoryId: 1n })
      }
    }
    await assertNothingElseCreated(fz)
  })

  test('each Content-Encoding other than identity is refused with 415 before the body is read', async () => {
    const fz = await shared()
    const auth: AuthCase = { label: 'Bearer key', header: `Bearer ${fz.key}`, valid: true, challenge: 'any' }
    for (const contentEncoding of CONTENT_ENCODINGS) {
      for (const body of bodies) {
        const contentCase: CreateCase = { body: { label: body.label, bytes: Buffer.from(body.text) }, auth, contentType: CONTENT_TYPES[0] as ContentTypeCase, contentEncoding }
        const sent = createSent(contentCase)
        const received = await send(fz, sent)
        checkResponse(fz, sent, received, expectCreate(contentCase, { status: body.status as 201 | 400, why: body.label, pet: { name: 'Rex', categoryId: 1n } }))
        assert.equal(received.status, contentEncoding.identity ? body.status : 415, describeSent(sent, received))
      }
    }
    await assertNothingElseCreated(fz)
  })
})

testPrototypesUnchanged()
