import { test } from 'node:test'
import assert from 'node:assert/strict'
import { API_KEY_PREFIX, bearerTokenOf, generateApiKey, hashApiKey, isWellFormedApiKey } from './api-keys.js'

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
