import { test } from 'node:test'
import assert from 'node:assert/strict'
import { deprecationHeaders, ifNoneMatchHits, nextPageLink } from './headers.js'

test('deprecation headers name the deprecation date, the sunset and the successor', () => {
  assert.deepEqual(deprecationHeaders(), {
    deprecation: '@1764892800',
    sunset: 'Thu, 05 Dec 2030 00:00:00 GMT',
    link: '</v1/pets>; rel="successor-version"'
  })
})

test('nextPageLink keeps limit and status and adds the cursor', () => {
  assert.equal(nextPageLink('/v1', { limit: 5, status: 'sold', cursor: 'abc.def' }), '</v1/pets?limit=5&status=sold&cursor=abc.def>; rel="next"')
  assert.equal(nextPageLink('https://api.example.com/v1', { limit: 20, status: undefined, cursor: 'c' }), '<https://api.example.com/v1/pets?limit=20&cursor=c>; rel="next"')
})

test('ifNoneMatchHits compares entity tags weakly and accepts lists and *', () => {
  assert.equal(ifNoneMatchHits('"a"', '"a"'), true)
  assert.equal(ifNoneMatchHits('"b", W/"a"', '"a"'), true)
  assert.equal(ifNoneMatchHits('*', '"a"'), true)
  assert.equal(ifNoneMatchHits('"b"', '"a"'), false)
  assert.equal(ifNoneMatchHits(undefined, '"a"'), false)
})
