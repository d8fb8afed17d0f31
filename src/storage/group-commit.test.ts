import { test } from 'node:test'
import assert from 'node:assert/strict'
import { GroupCommit } from './group-commit.js'

test('writes submitted together share one commit, up to the batch size, and each gets its own result', async () => {
  const batches: number[][] = []
  const commits = new GroupCommit<number, string>((items) => {
    batches.push(items)
    return items.map((item) => `done ${item}`)
  }, 4)
  const results = await Promise.all(Array.from({ length: 10 }, (_, i) => commits.submit(i)))
  assert.deepEqual(results, Array.from({ length: 10 }, (_, i) => `done ${i}`))
  assert.deepEqual(batches, [[0, 1, 2, 3], [4, 5, 6, 7], [8, 9]])
})

test('a batch size of 1 commits every write alone', async () => {
  const batches: number[][] = []
  const commits = new GroupCommit<number, number>((items) => { batches.push(items); return items }, 1)
  await Promise.all([1, 2, 3].map((item) => commits.submit(item)))
  assert.deepEqual(batches, [[1], [2], [3]])
})

test('a failed commit rejects exactly the writes of its batch, and later writes still commit', async () => {
  let calls = 0
  const commits = new GroupCommit<number, number>(async (items) => {
    calls++
    if (calls === 1) throw new Error('disk full')
    return items
  }, 2)
  const outcomes = await Promise.allSettled([1, 2, 3].map((item) => commits.submit(item)))
  assert.deepEqual(outcomes.map((outcome) => outcome.status), ['rejected', 'rejected', 'fulfilled'])
  await commits.drain()
})

test('batches never overlap: the next starts when the previous settled', async () => {
  let running = 0
  let overlapped = false
  const commits = new GroupCommit<number, number>(async (items) => {
    running++
    if (running > 1) overlapped = true
    await new Promise((resolve) => setImmediate(resolve))
    running--
    return items
  }, 1)
  await Promise.all([1, 2, 3, 4].map((item) => commits.submit(item)))
  assert.equal(overlapped, false)
})
