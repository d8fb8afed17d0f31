import { test } from 'node:test'
import assert from 'node:assert/strict'
import { accountSubject, addressBucket, addressSubject, LOGIN_THROTTLE, throttleVerdict } from './login-throttle.js'

const now = new Date(1_800_000_000_000)
const count = (attempts: number, startedMsAgo = 0): { attempts: number, windowStartedAt: Date } =>
  ({ attempts, windowStartedAt: new Date(now.getTime() - startedMsAgo) })

test('attempts up to the limits go ahead', () => {
  assert.deepEqual(throttleVerdict(count(LOGIN_THROTTLE.maxPerAccount), count(LOGIN_THROTTLE.maxPerAddress), now), { allowed: true })
})

test('one attempt over the account limit waits for the end of that window', () => {
  assert.deepEqual(throttleVerdict(count(LOGIN_THROTTLE.maxPerAccount + 1, 60_000), count(1), now),
    { allowed: false, retryAfterSeconds: LOGIN_THROTTLE.windowMs / 1000 - 60 })
})

test('one attempt over the address limit is refused whichever account it names', () => {
  const verdict = throttleVerdict(count(1), count(LOGIN_THROTTLE.maxPerAddress + 1, LOGIN_THROTTLE.windowMs - 500), now)
  assert.deepEqual(verdict, { allowed: false, retryAfterSeconds: 1 })
})

test('subjects are digests: the throttle table holds no email or address in clear', () => {
  assert.match(accountSubject('a@example.com'), /^account:[0-9a-f]{64}$/)
  assert.notEqual(accountSubject('a@example.com'), accountSubject('b@example.com'))
  assert.match(addressSubject('192.0.2.1'), /^address:[0-9a-f]{64}$/)
  assert.equal(addressSubject('::ffff:192.0.2.1'), addressSubject('192.0.2.1'))
})

test('addressBucket keeps IPv4, unmaps IPv4-mapped IPv6 and groups IPv6 by /64', () => {
  assert.equal(addressBucket('192.0.2.1'), '192.0.2.1')
  assert.equal(addressBucket('::ffff:192.0.2.1'), '192.0.2.1')
  assert.equal(addressBucket('::ffff:c000:201'), '192.0.2.1')
  assert.equal(addressBucket('2001:db8:1:2:3:4:5:6'), '2001:db8:1:2::/64')
  assert.equal(addressBucket('2001:db8:1:2::9'), '2001:db8:1:2::/64')
  assert.equal(addressBucket('2001:DB8:1:2:ffff::1%eth0'), '2001:db8:1:2::/64')
  assert.equal(addressBucket('::1'), '0:0:0:0::/64')
  assert.equal(addressBucket('not an address'), 'not an address')
})
