import { test } from 'node:test'
import assert from 'node:assert/strict'
import { DEVICE_COOKIE_MAX_AGE_MS, newDeviceCookie, verifyDeviceCookie } from './device-cookies.js'

const now = new Date(1_800_000_000_000)

test('a device cookie is valid for the email it was issued for, and its nonce names the browser', () => {
  const cookie = newDeviceCookie('secret', 'a@example.com', now)
  assert.match(cookie, /^v1\.\d+\.[A-Za-z0-9_-]{22}\.[A-Za-z0-9_-]{43}$/)
  assert.equal(cookie.includes('a@example.com'), false, 'the email is not in the cookie')
  const verified = verifyDeviceCookie('secret', cookie, 'a@example.com', now)
  assert.equal(verified?.nonce, cookie.split('.')[2])
  assert.notEqual(newDeviceCookie('secret', 'a@example.com', now), cookie, 'every cookie has a nonce of its own')
})

test('a device cookie counts for nothing with another email, another secret, tampered, expired or malformed', () => {
  const cookie = newDeviceCookie('secret', 'a@example.com', now)
  const [version, issuedAt, nonce, mac] = cookie.split('.') as [string, string, string, string]
  assert.equal(verifyDeviceCookie('secret', cookie, 'b@example.com', now), undefined)
  assert.equal(verifyDeviceCookie('other secret', cookie, 'a@example.com', now), undefined)
  assert.equal(verifyDeviceCookie('secret', [version, String(Number(issuedAt) + 1), nonce, mac].join('.'), 'a@example.com', now), undefined)
  assert.equal(verifyDeviceCookie('secret', [version, issuedAt, `${nonce.slice(0, -1)}${nonce.endsWith('A') ? 'B' : 'A'}`, mac].join('.'), 'a@example.com', now), undefined)
  assert.equal(verifyDeviceCookie('secret', cookie, 'a@example.com', new Date(now.getTime() + DEVICE_COOKIE_MAX_AGE_MS + 1000)), undefined)
  for (const value of [undefined, '', 'v1', `${cookie}x`, cookie.replace('v1.', 'v2.')]) {
    assert.equal(verifyDeviceCookie('secret', value, 'a@example.com', now), undefined, String(value))
  }
})
