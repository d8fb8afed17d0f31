import { test } from 'node:test'
import assert from 'node:assert/strict'
import { API_KEY_PREFIX, bearerTokenOf, generateApiKey, hashApiKey, holdsKeyShape, isWellFormedApiKey, parseZonedTime, redactKeyShapes } from './api-keys.js'

test('a generated key carries the type prefix, validates and is stored only as its hash', () => {
  const generated = generateApiKey()
  assert.ok(generated.key.startsWith(API_KEY_PREFIX))
  assert.equal(generated.key.length, API_KEY_PREFIX.length + 38)
  assert.ok(isWellFormedApiKey(generated.key))
  assert.equal(generated.hash, hashApiKey(generated.key))
  assert.ok(!generated.hash.includes(generated.key.slice(API_KEY_PREFIX.length)))
  assert.equal(generated.prefix, generated.key.slice(0, 12))
})

test('two generated keys differ', () => {
  assert.notEqual(generateApiKey().key, generateApiKey().key)
})

test('a key with one mistyped character fails its checksum', () => {
  const { key } = generateApiKey()
  const position = 10
  const typo = key.slice(0, position) + (key[position] === 'a' ? 'b' : 'a') + key.slice(position + 1)
  assert.equal(isWellFormedApiKey(typo), false)
  assert.equal(isWellFormedApiKey(key + 'x'), false)
  assert.equal(isWellFormedApiKey('ask_' + 'A'.repeat(38)), false)
})

test('bearerTokenOf reads the scheme case-insensitively', () => {
  assert.deepEqual(bearerTokenOf('Bearer abc'), { scheme: 'bearer', token: 'abc' })
  assert.deepEqual(bearerTokenOf('bearer abc'), { scheme: 'bearer', token: 'abc' })
  assert.deepEqual(bearerTokenOf('BEARER abc'), { scheme: 'bearer', token: 'abc' })
  assert.deepEqual(bearerTokenOf('Bearer'), { scheme: 'bearer' })
  assert.deepEqual(bearerTokenOf('Basic dXNlcjpwYXNz'), { scheme: 'other' })
  assert.deepEqual(bearerTokenOf(undefined), { scheme: 'none' })
})

test('holdsKeyShape finds live and test keys, whole or cut short, in any case; redactKeyShapes removes all of each', () => {
  const { key } = generateApiKey()
  for (const text of [key, `id-${key}`, key.slice(0, 12), 'ask_test_4f9Qz81mXc', 'ASK_abcdefgh']) assert.ok(holdsKeyShape(text), text)
  for (const text of ['ask_', 'key_0123456789abcdef', 'b3c1a7d2-1f0e-4a57-9d3e-2f6a8c9b0e11', 'req-42', 'task_1', 'task_12345678', 'ask_abc']) assert.ok(!holdsKeyShape(text), text)
  assert.equal(redactKeyShapes(`a=${key}&b=ask_test_4f9Qz81mXc-z`, '[r]'), 'a=[r]&b=[r]-z')
})

test('parseZonedTime takes real ISO 8601 times with a zone and refuses impossible or zoneless ones', () => {
  assert.equal(parseZonedTime('2027-01-31T18:00:00Z'), Date.UTC(2027, 0, 31, 18))
  assert.equal(parseZonedTime('2028-02-29T00:00+02:00'), Date.UTC(2028, 1, 28, 22))
  assert.equal(parseZonedTime('2027-12-31T23:59:59.999-05:30'), Date.UTC(2028, 0, 1, 5, 29, 59, 999))
  for (const text of ['2027-02-30T00:00:00Z', '2027-02-29T00:00:00Z', '2027-04-31T00:00:00Z', '2027-13-01T00:00:00Z', '2027-00-10T00:00:00Z',
    '2027-01-01T24:00:00Z', '2027-01-01T10:60:00Z', '2027-01-01T10:00:60Z', '2027-01-01T10:00:00+24:00', '2027-01-01T10:00:00+01:60',
    '2027-01-31T18:00:00', '2027-01-31', 'next week']) {
    assert.ok(Number.isNaN(parseZonedTime(text)), text)
  }
})
