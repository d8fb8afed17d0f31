import { test } from 'node:test'
import assert from 'node:assert/strict'
import {
  accountSubject,
  addressBucket,
  addressSubject,
  deviceSubject,
  LOGIN_THROTTLE,
  lockedVerdict,
  networkPrefix,
  pairSubject,
  unknownDeviceLockMs,
  windowVerdict
} from './login-throttle.js'

const now = new Date(1_800_000_000_000)
const count = (attempts: number, startedMsAgo = 0): { attempts: number, windowStartedAt: Date } =>
  ({ attempts, windowStartedAt: new Date(now.getTime() - startedMsAgo) })

test('attempts up to the limits go ahead', () => {
  assert.deepEqual(windowVerdict([
    { by: 'pair', count: count(LOGIN_THROTTLE.maxPerPair), max: LOGIN_THROTTLE.maxPerPair },
    { by: 'address', count: count(LOGIN_THROTTLE.maxPerAddress), max: LOGIN_THROTTLE.maxPerAddress }
  ], now), { allowed: true })
})

test('one attempt over a limit waits for the end of that window, and says which limit', () => {
  assert.deepEqual(windowVerdict([
    { by: 'address', count: count(1), max: LOGIN_THROTTLE.maxPerAddress },
    { by: 'pair', count: count(LOGIN_THROTTLE.maxPerPair + 1, 60_000), max: LOGIN_THROTTLE.maxPerPair }
  ], now), { allowed: false, by: 'pair', retryAfterSeconds: LOGIN_THROTTLE.windowMs / 1000 - 60 })
  assert.deepEqual(windowVerdict([{ by: 'address', count: count(LOGIN_THROTTLE.maxPerAddress + 1, LOGIN_THROTTLE.windowMs - 500), max: LOGIN_THROTTLE.maxPerAddress }], now),
    { allowed: false, by: 'address', retryAfterSeconds: 1 })
})

test('the lock on an email for unknown devices starts after the free attempts and doubles up to its cap', () => {
  const locks = Array.from({ length: 20 }, (_, index) => unknownDeviceLockMs(index + 1))
  assert.deepEqual(locks.slice(0, LOGIN_THROTTLE.freeFailures - 1), Array(LOGIN_THROTTLE.freeFailures - 1).fill(0))
  assert.equal(unknownDeviceLockMs(LOGIN_THROTTLE.freeFailures), LOGIN_THROTTLE.firstLockMs)
  assert.equal(unknownDeviceLockMs(LOGIN_THROTTLE.freeFailures + 1), 2 * LOGIN_THROTTLE.firstLockMs)
  for (let index = 1; index < locks.length; index++) assert.ok((locks[index] ?? 0) >= (locks[index - 1] ?? 0), 'never shorter')
  assert.equal(unknownDeviceLockMs(10_000), LOGIN_THROTTLE.maxLockMs)
  assert.deepEqual(lockedVerdict(new Date(now.getTime() + 29_500), now), { by: 'account', retryAfterSeconds: 30 })
})

test('subjects are digests: the throttle table holds no email, address or cookie in clear', () => {
  assert.match(accountSubject('a@example.com'), /^account:[0-9a-f]{64}$/)
  assert.notEqual(accountSubject('a@example.com'), accountSubject('b@example.com'))
  assert.match(addressSubject('192.0.2.1'), /^address:[0-9a-f]{64}$/)
  assert.equal(addressSubject('::ffff:192.0.2.1'), addressSubject('192.0.2.1'))
  assert.match(pairSubject('a@example.com', '192.0.2.1'), /^pair:[0-9a-f]{64}$/)
  assert.equal(pairSubject('a@example.com', '2001:db8::1'), pairSubject('a@example.com', '2001:db8::2'), 'one /64, one pair')
  assert.notEqual(pairSubject('a@example.com', '192.0.2.1'), pairSubject('a@example.com', '192.0.2.2'))
  assert.match(deviceSubject('nonce'), /^device:[0-9a-f]{64}$/)
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

test('the network of an address: an IPv4 /24, an IPv6 /56, IPv4-mapped IPv6 as IPv4', () => {
  assert.equal(networkPrefix('198.51.100.23'), '198.51.100.0/24')
  assert.equal(networkPrefix('::ffff:198.51.100.23'), '198.51.100.0/24')
  assert.equal(networkPrefix('2001:db8:1:2ab:3::4'), '2001:db8:1:200::/56')
  assert.equal(networkPrefix('2001:db8:1:2ff::9'), networkPrefix('2001:db8:1:200::1'))
  assert.notEqual(networkPrefix('2001:db8:1:300::1'), networkPrefix('2001:db8:1:200::1'))
  assert.equal(networkPrefix('not an address'), 'not an address')
})
