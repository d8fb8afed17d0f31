import { describe, test } from 'node:test'
import assert from 'node:assert/strict'
import fc from 'fast-check'
import { type Sent, assertListPage, assertNothingElseCreated, authArbitrary, authHeaders, checkResponse, describeSent, errorMessage, expectList, expectedPage, fuzzApp, harvest, keyOf, listParameters, listQueryArbitrary, reportTally, runProperty, seedCatalogue, send, tally, testPrototypesUnchanged } from '../helpers/fuzz.js'
import { perSuite } from '../helpers/build-app.js'

/* Fuzzing listPets' query strings from the contract: the generators and oracle are in test/helpers/fuzz.ts (FUZZ_RUNS, FUZZ_SEED). */

describe('fuzzing from the OpenAPI document', () => {
  test('listPets answers every generated query with the contract\'s status and exactly the expected page', async (t) => {
    const fz = await fuzzApp(t)
    const { limitMin, statuses } = listParameters(fz.doc)
    const pets = await seedCatalogue(fz, 37, statuses)
    const catalogue = await harvest(fz, pets)
    assert.ok(catalogue.cursors.size > 30, `harvested ${catalogue.cursors.size} cursors`)
    const labels = new Map<string, number>()
    const ifNoneMatch = fc.oneof(
      { weight: 12, arbitrary: fc.constant(undefined) },
      { weight: 1, arbitrary: fc.constantFrom('*', '"nope"', 'W/"nope"', 'garbage', '', '"a", "b"') },
      { weight: 2, arbitrary: fc.tuple(fc.constantFrom(...catalogue.etags), fc.boolean()).map(([etag, weak]) => weak ? `W/${etag.tag}` : etag.tag) }
    )
    const arbitrary = fc.record({
      query: listQueryArbitrary(catalogue, limitMin),
      auth: authArbitrary(fz.key, 30),
      method: fc.constantFrom('GET', 'GET', 'GET', 'HEAD'),
      questionMark: fc.boolean(),
      ifNoneMatch
    })
    await runProperty(t, 'listPets', arbitrary, async ({ query, auth, method, questionMark, ifNoneMatch }) => {
      tally(labels, query.label)
      const outcome = expectList(catalogue, query.query)
      const headers: Record<string, string> = { ...authHeaders(auth), ...(ifNoneMatch !== undefined && { 'if-none-match': ifNoneMatch }) }
      const url = query.query === '' && !questionMark ? '/v1/pets' : `/v1/pets?${query.query}`
      const sent: Sent = { label: `listPets: ${query.label} (${outcome.why})`, method, url, headers }
      let status = outcome.status
      if (outcome.page !== undefined && ifNoneMatch !== undefined) {
        // If-None-Match on a full page: 304 when a listed tag is this page's (weak comparison) or *.
        const { pets: page } = expectedPage(catalogue, outcome.page)
        const full = page.length === outcome.page.limit
        const tags = ifNoneMatch.split(',').map((tag) => tag.trim().replace(/^W\//, ''))
        const key = `${outcome.page.status}:${outcome.page.afterId}:${outcome.page.limit}`
        const ids = page.map((pet) => pet.id).join()
        const sameQuery = catalogue.etags.some((etag) => etag.key === key && tags.includes(etag.tag))
        const sameContent = catalogue.etags.some((etag) => etag.ids.join() === ids && tags.includes(etag.tag))
        if (full && (tags.includes('*') || sameQuery)) status = [304]
        else if (full && sameContent) status = [200, 304]
      }
      const received = await send(fz, sent)
      checkResponse(fz, sent, received, { route: { kind: 'operation', template: '/pets', method: 'get' }, status: auth.valid ? status : [401], authenticated: true, auth })
      if (received.status === 200 && outcome.page !== undefined) assertListPage(catalogue, outcome.page, sent, received)
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
  describe('listPets', () => {
    // Each regression seeds animals and reads a cursor of its own: one app for all.
    const shared = perSuite(fuzzApp)

    const twins: Array<[string, (cursor: string) => string]> = [
      ['with "=" appended', (cursor) => `${cursor}=`],
      ['with a space appended', (cursor) => `${cursor}%20`],
      ['with its last character changed in bits that base64url decoding drops', (cursor) => {
        const alphabet = 'ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-_'
        const last = alphabet.indexOf(cursor.slice(-1))
        return cursor.slice(0, -1) + (alphabet[(last & ~0xf) | ((last & 0xf) ^ 1)] ?? 'A')
      }]
    ]
    for (const [name, tamper] of twins) {
      test(`returns 400 invalid_request naming cursor for an issued cursor ${name}`, async () => {
        const fz = await shared()
        await seedCatalogue(fz, 3, listParameters(fz.doc).statuses)
        const first = await send(fz, { label: 'first page', method: 'GET', url: '/v1/pets?limit=1', headers: { authorization: `Bearer ${fz.key}` } })
        const cursor = new URL(/^<([^>]+)>/.exec(String(first.headers.link))?.[1] ?? '', 'http://host').searchParams.get('cursor') ?? ''
        const tampered = tamper(cursor)
        assert.notEqual(decodeURIComponent(tampered), cursor)
        const sent: Sent = { label: 'regression', method: 'GET', url: `/v1/pets?limit=1&cursor=${tampered}`, headers: { authorization: `Bearer ${fz.key}` } }
        const received = await send(fz, sent)
        checkResponse(fz, sent, received, { route: { kind: 'operation', template: '/pets', method: 'get' }, status: [400], authenticated: true, auth: keyOf(fz) })
        assert.match(errorMessage(received), /cursor/, describeSent(sent, received))
      })
    }
  })
})

testPrototypesUnchanged()
