import { test } from 'node:test'
import assert from 'node:assert/strict'
import { API_KEY_PREFIX, bearerTokenOf, generateApiKey, hashApiKey, holdsKeyShape, isWellFormedApiKey, redactKeyShapes } from './api-keys.js'

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
  for (const text of [key, `id-${key}`, key.slice(0, 12), 'ask_test_4f9Qz81mXc', 'ASK_abc']) assert.ok(holdsKeyShape(text), text)
  for (const text of ['ask_', 'key_0123456789abcdef', 'b3c1a7d2-1f0e-4a57-9d3e-2f6a8c9b0e11', 'req-42']) assert.ok(!holdsKeyShape(text), text)
  assert.equal(redactKeyShapes(`a=${key}&b=ask_test_4f9Qz81mXc-z`, '[r]'), 'a=[r]&b=[r]-z')
})
