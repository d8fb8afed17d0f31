import { describe, test } from 'node:test'
import assert from 'node:assert/strict'
import fc from 'fast-check'
import { CONTENT_ENCODINGS, CONTENT_TYPES, type ContentEncodingCase, type ContentTypeCase, type CreateCase, assertNothingElseCreated, authArbitrary, checkResponse, createBodyArbitrary, createSent, describeSent, errorMessage, expectCreate, fuzzApp, keyOf, newPetSchemaOf, reportTally, runCreateCase, runProperty, send, tally, testPrototypesUnchanged } from '../helpers/fuzz.js'
import { perSuite } from '../helpers/build-app.js'

/* Fuzzing createPet's bodies from the contract: the generators and oracle are in test/helpers/fuzz.ts (FUZZ_RUNS, FUZZ_SEED). */

describe('fuzzing from the OpenAPI document', () => {
  test('createPet answers every generated body with the contract\'s status and creates exactly the accepted animals', async (t) => {
    const fz = await fuzzApp(t)
    const newPetSchema = newPetSchemaOf(fz.doc)
    const validate = fz.validator.validatorAt('paths', '/pets', 'post', 'requestBody', 'content', 'application/json', 'schema')
    assert.ok(validate)
    const newPet = (value: unknown): boolean => validate(value)
    const labels = new Map<string, number>()
    const arbitrary = fc.record({
      body: createBodyArbitrary(fz.doc, newPetSchema),
      auth: authArbitrary(fz.key, 40),
      contentType: fc.oneof({ weight: 12, arbitrary: fc.constant(CONTENT_TYPES[0] as ContentTypeCase) }, { weight: 1, arbitrary: fc.constantFrom(...CONTENT_TYPES) }),
      contentEncoding: fc.oneof({ weight: 20, arbitrary: fc.constant(CONTENT_ENCODINGS[0] as ContentEncodingCase) }, { weight: 1, arbitrary: fc.constantFrom(...CONTENT_ENCODINGS) })
    })
    await runProperty(t, 'createPet', arbitrary, async (contentCase) => {
      tally(labels, contentCase.body.label)
      await runCreateCase(fz, contentCase, newPet)
    })
    reportTally(t, labels)
    t.diagnostic(`createPet: ${fz.created} animals created by ${fz.requests} requests`)
    await assertNothingElseCreated(fz)
  })
})

/**
 * The smallest counterexamples the properties above found, kept as plain tests: each
 * states what docs/decisions.md and the document require and fails until the service does it.
 */
describe('regressions found by the fuzzer', () => {
  describe('createPet', () => {
    // Each regression sends its own request and checks its own answer: one app for all.
    const shared = perSuite(fuzzApp)

    // JSON.parse rounds these literals to an integer; the contract refuses a categoryId that is not an integer, and never rounds one.
    for (const literal of ['1.0000000000000001', '0.99999999999999999', '1e-400', '-1e-400', '2.0000000000000001e1']) {
      test(`returns 400 invalid_request naming categoryId when categoryId is ${literal}, which is not an integer`, async () => {
        const fz = await shared()
        const contentCase: CreateCase = {
          body: { label: `categoryId ${literal}`, bytes: Buffer.from(`{"name":"Rex","categoryId":${literal}}`) },
          auth: keyOf(fz),
          contentType: CONTENT_TYPES[0] as ContentTypeCase,
          contentEncoding: CONTENT_ENCODINGS[0] as ContentEncodingCase
        }
        const sent = createSent(contentCase)
        const received = await send(fz, sent)
        checkResponse(fz, sent, received, expectCreate(contentCase, { status: 400, why: `categoryId ${literal} is not an integer` }))
        assert.match(errorMessage(received), /categoryId/, describeSent(sent, received))
        await assertNothingElseCreated(fz)
      })
    }
  })
})

testPrototypesUnchanged()
