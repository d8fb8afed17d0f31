import { test } from 'node:test'
import assert from 'node:assert/strict'
import { afterRefusal, HASH_QUEUE, rememberForMs, waitLeftMs, type Backoff } from './hash-queue.js'

const now = 1_800_000_000_000

/** The backoff after `count` refusals, each arriving `everyMs` after the previous one. */
function refusedTimes (count: number, everyMs = 0, options: { free?: number, atLeastMs?: number } = {}): Backoff | undefined {
  let backoff: Backoff | undefined
  for (let n = 0; n < count; n++) backoff = afterRefusal(backoff, now + n * everyMs, options)
  return backoff
}

test('each refusal doubles the wait, from the first wait up to the longest', () => {
  assert.equal(waitLeftMs([refusedTimes(1)], now), HASH_QUEUE.firstWaitMs)
  assert.equal(waitLeftMs([refusedTimes(2)], now), 2 * HASH_QUEUE.firstWaitMs)
  assert.equal(waitLeftMs([refusedTimes(4)], now), 8 * HASH_QUEUE.firstWaitMs)
  assert.equal(waitLeftMs([refusedTimes(60)], now), HASH_QUEUE.maxWaitMs)
})

test('a full queue asks for at least what the admitted checks need, and a wait is never shortened', () => {
  assert.equal(waitLeftMs([refusedTimes(1, 0, { atLeastMs: 7000 })], now), 7000)
  const long = afterRefusal(undefined, now, { atLeastMs: 30_000 })
  assert.equal(afterRefusal(long, now, { atLeastMs: 0 }).untilMs, now + 30_000)
})

test('a network has a number of free refusals before its own wait starts', () => {
  const free = HASH_QUEUE.freeNetworkRefusals
  assert.equal(waitLeftMs([refusedTimes(free, 0, { free, atLeastMs: 5000 })], now), 0)
  assert.equal(waitLeftMs([refusedTimes(free + 1, 0, { free })], now), HASH_QUEUE.firstWaitMs)
})

test('a client waits for the longest wait of its subjects, and for none once they have ended', () => {
  const address = refusedTimes(1)
  const network = refusedTimes(HASH_QUEUE.freeNetworkRefusals + 3, 0, { free: HASH_QUEUE.freeNetworkRefusals })
  assert.equal(waitLeftMs([address, network, undefined], now), 4 * HASH_QUEUE.firstWaitMs)
  assert.equal(waitLeftMs([address, network], now + HASH_QUEUE.maxWaitMs), 0)
  assert.equal(waitLeftMs([], now), 0)
})

test('refusals are forgotten a while after their wait ended, and remembered until then', () => {
  const backoff = refusedTimes(5)
  assert.ok(backoff !== undefined)
  const later = backoff.untilMs + HASH_QUEUE.forgetAfterMs + 1
  assert.deepEqual(afterRefusal(backoff, later), { refusals: 1, untilMs: later + HASH_QUEUE.firstWaitMs })
  assert.equal(afterRefusal(backoff, later - 2).refusals, 6)
  assert.equal(rememberForMs(backoff, now), backoff.untilMs - now + HASH_QUEUE.forgetAfterMs)
})

test('the places and threads kept for log-ins and known browsers leave sign-ups fewer', () => {
  const { places, concurrent, placesFor, threadsFor, rank } = HASH_QUEUE
  assert.equal(placesFor['known-device'], places)
  assert.ok(placesFor['sign-up'] < placesFor['log-in'] && placesFor['log-in'] < placesFor['known-device'])
  assert.ok(threadsFor['sign-up'] < concurrent && threadsFor['log-in'] === concurrent)
  assert.ok(rank['sign-up'] < rank['log-in'] && rank['log-in'] < rank['known-device'])
})
