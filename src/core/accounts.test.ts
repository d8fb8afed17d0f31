import { test } from 'node:test'
import assert from 'node:assert/strict'
import { controlCharacterProblem, normalizeEmail } from './accounts.js'

test('normalizeEmail trims and lower-cases so one address means one account', () => {
  assert.equal(normalizeEmail('  Alice@Example.COM '), 'alice@example.com')
})

test('normalizeEmail refuses what is not an address', () => {
  for (const text of ['', 'alice', 'alice@', '@example.com', 'a b@example.com', 'alice@example', `${'a'.repeat(250)}@example.com`, 'a\u0000b@x.io', 'a@x.io\u0000']) {
    assert.equal(normalizeEmail(text), undefined, JSON.stringify(text))
  }
})

test('controlCharacterProblem refuses U+0000 to U+001F and U+007F, naming the field and the character', () => {
  for (let code = 0; code <= 0x1f; code++) {
    assert.match(controlCharacterProblem('label', `a${String.fromCharCode(code)}b`) ?? '', /^The label must not contain control characters \(it contains U\+00[01][0-9A-F]\)\.$/)
  }
  assert.equal(controlCharacterProblem('password', 'pass\u007fword'), 'The password must not contain control characters (it contains U+007F).')
  assert.equal(controlCharacterProblem('email', 'a\u0000b@x.io'), 'The email address must not contain control characters (it contains U+0000).')
  assert.match(controlCharacterProblem('name', 'tab\there') ?? '', /^The name /)
})

test('controlCharacterProblem accepts every other character, spaces, non-ASCII and C1 included', () => {
  for (const text of ['', 'plain', 'with spaces', 'Ünïcødé 🐈', '\u0080\u009f', '\u00a0', '\u2028', '~']) {
    assert.equal(controlCharacterProblem('label', text), undefined, JSON.stringify(text))
  }
})
