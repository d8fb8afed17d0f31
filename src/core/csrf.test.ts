import { test } from 'node:test'
import assert from 'node:assert/strict'
import { isWellFormedCsrfToken, newCsrfToken, presessionToken, tokensMatch } from './csrf.js'

test('tokens are 256 random bits in base64url', () => {
  const token = newCsrfToken()
  assert.equal(isWellFormedCsrfToken(token), true)
  assert.notEqual(newCsrfToken(), token)
  assert.equal(isWellFormedCsrfToken('short'), false)
})

test('the pre-session token depends on the secret and the nonce', () => {
  const nonce = newCsrfToken()
  const token = presessionToken('secret-a', nonce)
  assert.equal(presessionToken('secret-a', nonce), token)
  assert.notEqual(presessionToken('secret-b', nonce), token)
  assert.notEqual(presessionToken('secret-a', newCsrfToken()), token)
  assert.equal(isWellFormedCsrfToken(token), true)
})

test('tokensMatch accepts only the same string', () => {
  const token = newCsrfToken()
  assert.equal(tokensMatch(token, token), true)
  assert.equal(tokensMatch(token, token.slice(1)), false)
  assert.equal(tokensMatch(token, `${token} `), false)
  assert.equal(tokensMatch(token, ''), false)
  assert.equal(tokensMatch(token, undefined), false)
  assert.equal(tokensMatch(token, [token]), false, 'a repeated form field is not a token')
})
