import { test } from 'node:test'
import assert from 'node:assert/strict'
import { batchedLookup } from './batched-lookup.js'

test('lookups of one turn share one call, up to the batch size, and each gets its own value', async () => {
  const calls: number[][] = []
  const lookup = batchedLookup<number, string>(async (keys) => {
    calls.push(keys)
    return new Map(keys.filter((key) => key % 2 === 0).map((key) => [key, `even ${key}`]))
  }, 3)
  const values = await Promise.all([1, 2, 3, 4, 2].map(async (key) => await lookup.get(key)))
  assert.deepEqual(values, [undefined, 'even 2', undefined, 'even 4', 'even 2'])
  assert.deepEqual(calls, [[1, 2, 3], [4]], 'a key asked for twice is looked up once')
})

test('lookups of a later turn make a batch of their own, even while the first is in flight', async () => {
  const calls: number[][] = []
  let release: () => void = () => {}
  const held = new Promise<void>((resolve) => { release = resolve })
  const lookup = batchedLookup<number, number>(async (keys) => {
    calls.push(keys)
    if (calls.length === 1) await held
    return new Map(keys.map((key) => [key, key * 10]))
  }, 100)
  const first = lookup.get(1)
  await new Promise((resolve) => setImmediate(resolve))
  assert.equal(await lookup.get(2), 20)
  release()
  assert.equal(await first, 10)
  assert.deepEqual(calls, [[1], [2]])
})

test('a failed call rejects exactly the lookups of its batch', async () => {
  const lookup = batchedLookup<number, number>(async (keys) => {
    if (keys.includes(1)) throw new Error('connection lost')
    return new Map(keys.map((key) => [key, key]))
  }, 1)
  const outcomes = await Promise.allSettled([1, 2].map(async (key) => await lookup.get(key)))
  assert.equal(outcomes[0]?.status, 'rejected')
  assert.deepEqual(outcomes[1], { status: 'fulfilled', value: 2 })
})
