import { test } from 'node:test'
import assert from 'node:assert/strict'
import { normalizeEmail } from './accounts.js'

test('normalizeEmail trims and lower-cases so one address means one account', () => {
  assert.equal(normalizeEmail('  Alice@Example.COM '), 'alice@example.com')
})

test('normalizeEmail refuses what is not an address', () => {
  for (const text of ['', 'alice', 'alice@', '@example.com', 'a b@example.com', 'alice@example', `${'a'.repeat(250)}@example.com`]) {
    assert.equal(normalizeEmail(text), undefined, text)
  }
})
