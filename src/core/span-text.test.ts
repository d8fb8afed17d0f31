import assert from 'node:assert/strict'
import { test } from 'node:test'
import { IDEMPOTENCY_KEY_TTL_MS } from './idempotency.js'
import { RESET_TOKEN_TTL_MS, VERIFY_TOKEN_TTL_MS } from './link-tokens.js'
import { spanText } from './span-text.js'

test('a span of time reads in its largest unit that fits at least twice, rounded', () => {
  assert.equal(spanText(0), '0 seconds')
  assert.equal(spanText(1000), '1 second')
  assert.equal(spanText(90_000), '90 seconds')
  assert.equal(spanText(30 * 60_000), '30 minutes')
  assert.equal(spanText(12 * 3_600_000), '12 hours')
  assert.equal(spanText(30 * 86_400_000), '30 days')
})

test('the lifetimes the portal, the mail and the API description state read as people say them', () => {
  assert.equal(spanText(VERIFY_TOKEN_TTL_MS), '24 hours')
  assert.equal(spanText(RESET_TOKEN_TTL_MS), '60 minutes')
  assert.equal(spanText(IDEMPOTENCY_KEY_TTL_MS), '24 hours')
})
