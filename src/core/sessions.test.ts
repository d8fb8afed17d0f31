import { test } from 'node:test'
import assert from 'node:assert/strict'
import {
  extendedExpiry,
  hashSessionToken,
  isSessionLive,
  isWellFormedSessionToken,
  newSessionToken,
  SESSION_ABSOLUTE_MS,
  SESSION_IDLE_MS,
  sessionExpiry
} from './sessions.js'

const at = (ms: number): Date => new Date(1_800_000_000_000 + ms)

test('session tokens are 256 random bits in base64url, stored as a SHA-256 digest', () => {
  const token = newSessionToken()
  assert.equal(isWellFormedSessionToken(token), true)
  assert.notEqual(newSessionToken(), token)
  assert.match(hashSessionToken(token), /^[0-9a-f]{64}$/)
  assert.notEqual(hashSessionToken(token), token)
  for (const bad of ['', 'x', `${token}x`, token.slice(1) + '=', token.slice(1) + '.']) assert.equal(isWellFormedSessionToken(bad), false, bad)
})

test('a session lasts the idle timeout after its last use, never past the absolute timeout', () => {
  assert.equal(sessionExpiry(at(0), at(0)).getTime(), at(SESSION_IDLE_MS).getTime())
  assert.equal(sessionExpiry(at(0), at(SESSION_ABSOLUTE_MS - 1000)).getTime(), at(SESSION_ABSOLUTE_MS).getTime())
  assert.equal(isSessionLive({ expiresAt: at(10) }, at(9)), true)
  assert.equal(isSessionLive({ expiresAt: at(10) }, at(10)), false)
})

test('the expiry moves only when it gains at least a minute', () => {
  const session = { createdAt: at(0), expiresAt: sessionExpiry(at(0), at(0)) }
  assert.equal(extendedExpiry(session, at(30_000)), undefined)
  assert.equal(extendedExpiry(session, at(60_000))?.getTime(), at(60_000 + SESSION_IDLE_MS).getTime())
  const old = { createdAt: at(0), expiresAt: at(SESSION_ABSOLUTE_MS) }
  assert.equal(extendedExpiry(old, at(SESSION_ABSOLUTE_MS - 5000)), undefined, 'never beyond the absolute timeout')
})
