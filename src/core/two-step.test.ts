import { test } from 'node:test'
import assert from 'node:assert/strict'
import { Secret, TOTP } from 'otpauth'
import {
  groupedSecret,
  hashRecoveryCode,
  isRecoveryCodeShape,
  matchingRecoveryCode,
  newRecoveryCodes,
  newTotpSecret,
  normalizedCode,
  openTotpSecret,
  sealTotpSecret,
  totpStep,
  totpUri
} from './two-step.js'

// RFC 6238 appendix B: the SHA-1 secret "12345678901234567890", and its codes at these times (the last six digits of eight).
const RFC_SECRET = Secret.fromLatin1('12345678901234567890').base32
const RFC_VECTORS: ReadonlyArray<readonly [number, string]> = [[59, '287082'], [1111111109, '081804'], [1234567890, '005924'], [2000000000, '279037']]

test('codes are the RFC 6238 test vectors; a code counts within one step either side of now, and names its step', () => {
  for (const [seconds, code] of RFC_VECTORS) {
    const now = new Date(seconds * 1000)
    const step = Math.floor(seconds / 30)
    assert.equal(totpStep(RFC_SECRET, code, now), step, `at ${seconds}`)
    assert.equal(totpStep(RFC_SECRET, code, new Date(now.getTime() + 30_000)), step, 'the step before now')
    assert.equal(totpStep(RFC_SECRET, code, new Date(now.getTime() - 30_000)), step, 'the step after now')
    assert.equal(totpStep(RFC_SECRET, code, new Date(now.getTime() + 60_000)), undefined, 'two steps away')
  }
  assert.equal(totpStep(RFC_SECRET, '28708', new Date(59_000)), undefined, 'five digits')
  assert.equal(totpStep(RFC_SECRET, '2870820', new Date(59_000)), undefined, 'seven digits')
})

test('a new secret is 160 random bits; its URI is what authenticator apps read', () => {
  const secret = newTotpSecret()
  assert.match(secret, /^[A-Z2-7]{32}$/)
  assert.notEqual(newTotpSecret(), secret)
  const uri = totpUri(secret, 'dev@example.com')
  assert.match(uri, /^otpauth:\/\/totp\/Animal%20Store:dev%40example\.com\?/)
  assert.match(uri, new RegExp(`secret=${secret}`))
  assert.match(uri, /algorithm=SHA1&digits=6&period=30/)
  assert.equal(groupedSecret('ABCDEFGHIJ'), 'ABCD EFGH IJ')
  const code = new TOTP({ secret: Secret.fromBase32(secret) }).generate({ timestamp: 1_800_000_000_000 })
  assert.equal(totpStep(secret, code, new Date(1_800_000_000_000)), 60_000_000)
})

test('a sealed secret opens for its own account only, and not once tampered with; it does not show the secret', () => {
  const secret = newTotpSecret()
  const sealed = sealTotpSecret('sealing secret', 7, secret)
  assert.equal(sealed.includes(secret), false)
  assert.notEqual(sealTotpSecret('sealing secret', 7, secret), sealed, 'a fresh IV every time')
  assert.equal(openTotpSecret('sealing secret', 7, sealed), secret)
  assert.equal(openTotpSecret('sealing secret', 8, sealed), undefined, 'moved to another account')
  assert.equal(openTotpSecret('another secret', 7, sealed), undefined)
  const bytes = Buffer.from(sealed, 'base64url')
  bytes[bytes.length - 1] = (bytes[bytes.length - 1] ?? 0) ^ 1
  assert.equal(openTotpSecret('sealing secret', 7, bytes.toString('base64url')), undefined, 'tampered')
  assert.equal(openTotpSecret('sealing secret', 7, 'short'), undefined)
})

test('ten distinct recovery codes of ten base32 characters; each matches its own digest only', () => {
  const codes = newRecoveryCodes()
  assert.equal(codes.length, 10)
  assert.equal(new Set(codes).size, 10)
  for (const code of codes) assert.match(code, /^[a-z2-7]{5}-[a-z2-7]{5}$/)
  const typed = codes.map((code) => normalizedCode(code) ?? '')
  const hashes = typed.map(hashRecoveryCode)
  assert.ok(typed.every(isRecoveryCodeShape))
  assert.equal(matchingRecoveryCode(typed[3] ?? '', hashes), hashes[3])
  assert.equal(matchingRecoveryCode('aaaaabbbbb', hashes), undefined)
  assert.equal(matchingRecoveryCode(typed[0] ?? '', ['not hex', 'ab']), undefined, 'malformed digests match nothing')
})

test('what people type is normalised: spaces and hyphens go, letters are lower-cased; over 32 characters is no code', () => {
  assert.equal(normalizedCode(' 123 456 '), '123456')
  assert.equal(normalizedCode('ABCDE-FGH23'), 'abcdefgh23')
  assert.equal(normalizedCode('1'.repeat(32)), '1'.repeat(32))
  assert.equal(normalizedCode('1'.repeat(33)), undefined)
})
