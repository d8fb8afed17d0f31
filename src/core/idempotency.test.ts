import { test } from 'node:test'
import assert from 'node:assert/strict'
import { decideClaim, fingerprintOf, IDEMPOTENCY_KEY_HEADER, parseIdempotencyKey } from './idempotency.js'

test('parseIdempotencyKey accepts plain and quoted keys of visible ASCII', () => {
  assert.equal(parseIdempotencyKey('abc-123'), 'abc-123')
  assert.equal(parseIdempotencyKey('"8e03978e-40d5-43e8-bc93-6894a57f9324"'), '8e03978e-40d5-43e8-bc93-6894a57f9324')
  for (const bad of ['', '""', 'with space', 'ü', 'x'.repeat(256)]) assert.equal(parseIdempotencyKey(bad), undefined, bad)
})

test('fingerprintOf ignores nothing that matters and nothing else', () => {
  assert.equal(fingerprintOf({ name: 'Rex', categoryId: 1 }), fingerprintOf({ name: 'Rex', categoryId: 1 }))
  assert.notEqual(fingerprintOf({ name: 'Rex', categoryId: 1 }), fingerprintOf({ name: 'Rex', categoryId: 1, status: 'sold' }))
  assert.notEqual(fingerprintOf({ name: 'Rex', categoryId: 9007199254740993n }), fingerprintOf({ name: 'Rex', categoryId: 9007199254740992 }))
})

test('decideClaim: same fingerprint replays or waits, another is refused, old records are reclaimed', () => {
  const times = { expiredBefore: 1000, abandonedBefore: 5000 }
  assert.equal(decideClaim({ fingerprint: 'a', petId: 7, createdAt: 9000 }, 'a', times), 'completed')
  assert.equal(decideClaim({ fingerprint: 'a', petId: null, createdAt: 9000 }, 'a', times), 'in_flight')
  assert.equal(decideClaim({ fingerprint: 'a', petId: 7, createdAt: 9000 }, 'b', times), 'mismatch')
  assert.equal(decideClaim({ fingerprint: 'a', petId: null, createdAt: 9000 }, 'b', times), 'mismatch')
  assert.equal(decideClaim({ fingerprint: 'a', petId: 7, createdAt: 500 }, 'b', times), 'reclaim')
  assert.equal(decideClaim({ fingerprint: 'a', petId: null, createdAt: 4000 }, 'a', times), 'reclaim')
  assert.equal(decideClaim({ fingerprint: 'a', petId: 7, createdAt: 4000 }, 'a', times), 'completed')
})

test('IDEMPOTENCY_KEY_HEADER, the bounds the document states, accepts exactly the header values parseIdempotencyKey accepts', () => {
  const pattern = new RegExp(IDEMPOTENCY_KEY_HEADER.pattern, 'u')
  const visible = Array.from({ length: 0x7e - 0x21 + 1 }, (_, index) => String.fromCharCode(0x21 + index)).join('')
  const samples = ['', '"', '""', '"""', 'a', '"a"', '"a', 'a"', 'with space', '"with space"', 'ü', '\t', visible,
    'x'.repeat(254), 'x'.repeat(255), 'x'.repeat(256), `"${'x'.repeat(254)}"`, `"${'x'.repeat(255)}"`, `"${'x'.repeat(256)}"`]
  for (const sample of samples) {
    const documented = sample.length >= IDEMPOTENCY_KEY_HEADER.minLength && sample.length <= IDEMPOTENCY_KEY_HEADER.maxLength && pattern.test(sample)
    assert.equal(documented, parseIdempotencyKey(sample) !== undefined, JSON.stringify(sample))
  }
})
