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

/**
 * Runs `turns` turns of the event loop, calling `each` in every one and then holding the loop for
 * 100 µs, so that whatever `each` scheduled finds the loop busy; resolves after the last turn, or
 * with the turn at which `each` returned true.
 */
async function busyTurns (turns: number, each: (turn: number) => boolean | undefined = () => undefined): Promise<number> {
  for (let turn = 0; turn < turns; turn++) {
    await new Promise((resolve) => setImmediate(resolve))
    if (each(turn) === true) return turn
    const until = performance.now() + 0.1
    while (performance.now() < until);
  }
  return turns
}

const recordingCommits = (maxBatchSize: number, maxWaitMs: number): { commits: GroupCommit<number, number>, batches: number[][] } => {
  const batches: number[][] = []
  return { commits: new GroupCommit<number, number>((items) => { batches.push(items); return items }, maxBatchSize, maxWaitMs), batches }
}

test('a lone write is not held back by the wait: it commits at the first turn with nothing else to do', { timeout: 10_000 }, async () => {
  const { commits, batches } = recordingCommits(256, 60_000)
  assert.equal(await commits.submit(7), 7)
  assert.deepEqual(batches, [[7]])
})

test('while the loop is busy, writes from many turns wait for one another and share one commit', async () => {
  const written: Array<Promise<number>> = []
  const waiting = recordingCommits(256, 60_000)
  await busyTurns(20, (turn) => { written.push(waiting.commits.submit(turn)); return undefined })
  await Promise.all(written)
  assert.deepEqual(waiting.batches, [Array.from({ length: 20 }, (_, i) => i)])

  // Without a wait, each turn commits its own.
  const eager = recordingCommits(256, 0)
  await busyTurns(20, (turn) => { void eager.commits.submit(turn); return undefined })
  await eager.commits.drain()
  assert.equal(eager.batches.length, 20)
})

test('a busy loop holds a batch no longer than the wait allows', async () => {
  // Room for every write in one batch: only the wait can end one.
  const { commits, batches } = recordingCommits(1000, 20)
  // 400 turns of at least 100 µs: at least 40 ms, twice the wait.
  await busyTurns(400, (turn) => { void commits.submit(turn); return undefined })
  await commits.drain()
  assert.ok(batches.length >= 2, `${batches.length} batches`)
  assert.ok(batches.length < 200, `${batches.length} batches: writes did not wait for one another`)
  assert.equal(batches.flat().length, 400)
})

test('a full batch is committed at once, however long the wait allowed', async () => {
  const { commits, batches } = recordingCommits(4, 60_000)
  const turnsUntilCommitted = await busyTurns(10_000, (turn) => {
    if (turn === 0) for (let item = 0; item < 4; item++) void commits.submit(item)
    return batches.length > 0
  })
  assert.deepEqual(batches, [[0, 1, 2, 3]])
  assert.ok(turnsUntilCommitted < 10, `committed after ${turnsUntilCommitted} turns`)
})
