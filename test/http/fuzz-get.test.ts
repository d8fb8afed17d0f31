import { describe, test } from 'node:test'
import assert from 'node:assert/strict'
import fc from 'fast-check'
import { MAX_PARAM_LENGTH, type Sent, assertNothingElseCreated, assertPets, authArbitrary, authHeaders, checkResponse, describeSent, expectPetId, fuzzApp, keyOf, listParameters, petIdArbitrary, reportTally, runProperty, seedCatalogue, send, tally, testPrototypesUnchanged } from '../helpers/fuzz.js'
import { perSuite } from '../helpers/build-app.js'

/* Fuzzing getPet's petId from the contract: the generators and oracle are in test/helpers/fuzz.ts (FUZZ_RUNS, FUZZ_SEED). */

describe('fuzzing from the OpenAPI document', () => {
  test('getPet answers every generated petId with the contract\'s status, body and deprecation headers', async (t) => {
    const fz = await fuzzApp(t)
    const pets = await seedCatalogue(fz, 12, listParameters(fz.doc).statuses)
    const ids = pets.map((pet) => pet.id)
    const known = new Set(ids)
    const byId = new Map(pets.map((pet) => [pet.id, pet]))
    const labels = new Map<string, number>()
    const arbitrary = fc.record({
      petId: petIdArbitrary(ids),
      auth: authArbitrary(fz.key, 30),
      method: fc.constantFrom('GET', 'GET', 'GET', 'HEAD'),
      query: fc.option(fc.constantFrom('x=1', 'petId=1', 'limit=0', '%ZZ', '__proto__[polluted]=1'), { freq: 8 })
    })
    await runProperty(t, 'getPet', arbitrary, async ({ petId, auth, method, query }) => {
      tally(labels, petId.label)
      const outcome = expectPetId(petId.segment, known)
      const sent: Sent = { label: `getPet: ${petId.label} (${outcome.why})`, method, url: `/v1/pets/${petId.segment}${query === null ? '' : `?${query}`}`, headers: authHeaders(auth) }
      const received = await send(fz, sent)
      checkResponse(fz, sent, received, { route: { kind: 'operation', template: '/pets/{petId}', method: 'get' }, status: [auth.valid ? outcome.status : 401], authenticated: true, auth })
      if (received.status === 200 && method === 'GET') {
        const pet = byId.get(Number(decodeURIComponent(petId.segment)))
        assert.ok(pet, describeSent(sent, received))
        assertPets(`[${received.body}]`, [pet], describeSent(sent, received))
      }
    })
    reportTally(t, labels)
    await assertNothingElseCreated(fz)
  })
})

/**
 * The smallest counterexamples the properties above found, kept as plain tests: each
 * states what docs/decisions.md and the document require and fails until the service does it.
 */
describe('regressions found by the fuzzer', () => {
  describe('getPet', () => {
    // Each regression sends its own request and checks its own answer: one app for all.
    const shared = perSuite(fuzzApp)

    for (const petId of ['%', '1'.repeat(MAX_PARAM_LENGTH + 1)]) {
      test(`carries Deprecation, Sunset and Link on the 400 for GET /v1/pets/${petId.length > 10 ? `<${petId.length} digits>` : petId}`, async () => {
        const fz = await shared()
        const sent: Sent = { label: 'regression', method: 'GET', url: `/v1/pets/${petId}`, headers: { authorization: `Bearer ${fz.key}` } }
        const received = await send(fz, sent)
        checkResponse(fz, sent, received, { route: { kind: 'operation', template: '/pets/{petId}', method: 'get' }, status: [400], authenticated: true, auth: keyOf(fz) })
      })
    }
  })
})

testPrototypesUnchanged()
