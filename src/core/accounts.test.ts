import { test } from 'node:test'
import assert from 'node:assert/strict'
import { controlCharacterProblem, normalizeEmail, withoutControlCharacters } from './accounts.js'

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

test('controlCharacterProblem refuses the C1 controls U+0080 to U+009F in every field', () => {
  for (const field of ['email', 'name', 'label', 'password', 'scopes', 'duration', 'expiry'] as const) {
    for (let code = 0x80; code <= 0x9f; code++) {
      assert.match(controlCharacterProblem(field, `a${String.fromCharCode(code)}b`) ?? '', /^The .+ must not contain control characters \(it contains U\+00[89][0-9A-F]\)\.$/, `${field} U+${code.toString(16)}`)
    }
  }
  assert.equal(controlCharacterProblem('email', 'a\u0085b@x.io'), 'The email address must not contain control characters (it contains U+0085).')
})

const OVERRIDES = ['\u202a', '\u202b', '\u202c', '\u202d', '\u202e', '\u2066', '\u2067', '\u2068', '\u2069']
const MARKS = ['\u200e', '\u200f', '\u061c']

test('controlCharacterProblem refuses every bidirectional control in emails and labels, naming the field and the character', () => {
  for (const character of [...OVERRIDES, ...MARKS]) {
    const code = character.charCodeAt(0).toString(16).toUpperCase().padStart(4, '0')
    assert.equal(controlCharacterProblem('email', `a${character}b@x.io`), `The email address must not contain bidirectional formatting characters (it contains U+${code}).`)
    assert.equal(controlCharacterProblem('label', `lap${character}top`), `The label must not contain bidirectional formatting characters (it contains U+${code}).`)
  }
})

test('controlCharacterProblem refuses overrides, embeddings and isolates in a name but keeps the marks right-to-left text needs', () => {
  for (const character of OVERRIDES) {
    assert.match(controlCharacterProblem('name', `a${character}b`) ?? '', /^The name must not contain bidirectional formatting characters \(it contains U\+20[26][0-9A-F]\)\.$/)
  }
  for (const character of MARKS) assert.equal(controlCharacterProblem('name', `שלום${character} 42`), undefined)
})

test('normalizeEmail refuses C1 and bidirectional controls', () => {
  for (const text of ['a\u0085b@x.io', 'alice@example.com\u0085', 'moc.elpmaxe@\u202eecila', 'a\u200eb@x.io']) {
    assert.equal(normalizeEmail(text), undefined, JSON.stringify(text))
  }
})

test('withoutControlCharacters removes C0, C1 and bidirectional controls for showing text back', () => {
  assert.equal(withoutControlCharacters('a\u0000b\u0085c\u202ed\u200ee'), 'abcde')
})

test('controlCharacterProblem accepts every other character, spaces and non-ASCII included', () => {
  for (const text of ['', 'plain', 'with spaces', 'Ünïcødé 🐈', '\u00a0', '\u00a0\u00ff', '\u2028', '\u2029', '\u200b', '~']) {
    assert.equal(controlCharacterProblem('label', text), undefined, JSON.stringify(text))
  }
  assert.equal(controlCharacterProblem('password', 'pass\u202eword\u200f'), undefined, 'a password is never shown, so bidirectional controls are only characters in it')
})
