import assert from 'node:assert/strict'
import { randomUUID } from 'node:crypto'
import { test } from 'node:test'
import { Redis } from 'ioredis'
import { RateLimiter, slackFor, type Admission } from '../../src/services/rate-limiter.js'
import { redisAvailable, REDIS_URL } from '../helpers/redis.js'

const LIMIT = 100

test('two instances sharing counts through Redis admit at most limit + instances × slack, even when many requests wait for one reconciliation', { timeout: 60_000 }, async (t) => {
  if (!await redisAvailable()) {
    t.skip('Redis is not reachable')
    return
  }
  // A prefix of the test's own, so that nothing else counts into its keys.
  const prefix = `animal-store-test:${randomUUID()}:`
  const limiters = await Promise.all([0, 1].map(async () => {
    const redis = new Redis(REDIS_URL, { maxRetriesPerRequest: 1 })
    await new Promise((resolve) => redis.once('ready', resolve))
    const limiter = new RateLimiter(LIMIT, redis, { onSharedChange: () => {} }, prefix)
    t.after(() => { limiter.close() })
    return limiter
  }))
  const key = 'key-1'
  // The burst must land in one window of a minute: start with at least 10 s of this one left.
  const WINDOW_MS = 60_000
  const left = WINDOW_MS - (Date.now() % WINDOW_MS)
  if (left < 10_000) await new Promise((resolve) => setTimeout(resolve, left + 50))
  const window = Math.floor(Date.now() / WINDOW_MS)
  const admitted = (answers: Admission[]): number => answers.filter((answer) => answer.admitted).length
  // Both instances admit most of the limit, one request at a time, each waiting when it must.
  let early = 0
  for (let index = 0; index < LIMIT - 10; index++) early += admitted([await limiters[index % 2]!.take(key)])
  assert.equal(early, LIMIT - 10)
  // Then a burst: 30 requests on each instance in the same turn, most of them waiting for a reconciliation.
  const burst = await Promise.all(limiters.flatMap((limiter) => Array.from({ length: 30 }, () => limiter.take(key))))
  assert.equal(Math.floor(Date.now() / WINDOW_MS), window, 'the test ran within one window')
  const total = early + admitted(burst)
  assert.ok(total <= LIMIT + 2 * slackFor(LIMIT), `${total} admitted in one window, more than ${LIMIT} + 2 × ${slackFor(LIMIT)}`)
  assert.ok(total >= LIMIT, `${total} admitted: refused before the limit was reached`)
})
