import { test } from 'node:test'
import assert from 'node:assert/strict'
import { SyncBarrier } from './sync-barrier.js'

/** A sync that finishes when the test says so, recording when each began. */
function controlledSync () {
  const started: Array<{ finish: (error?: Error) => void }> = []
  const sync = async (): Promise<void> => await new Promise<void>((resolve, reject) => {
    started.push({ finish: (error) => { if (error) reject(error); else resolve() } })
  })
  return { started, sync }
}

test('a caller is answered only by a sync that began after its call', async () => {
  const { started, sync } = controlledSync()
  const barrier = new SyncBarrier(sync)
  const settled: string[] = []
  const first = barrier.covering().then(() => settled.push('first'))
  assert.equal(started.length, 1)
  // Arrives while the first sync runs: that sync may not cover what it wrote.
  const second = barrier.covering().then(() => settled.push('second'))
  started[0]?.finish()
  await first
  assert.deepEqual(settled, ['first'])
  await new Promise((resolve) => setImmediate(resolve))
  assert.equal(started.length, 2, 'the second caller gets a sync of its own')
  assert.deepEqual(settled, ['first'])
  started[1]?.finish()
  await second
  assert.deepEqual(settled, ['first', 'second'])
})

test('callers that arrive while a sync runs share one next sync', async () => {
  const { started, sync } = controlledSync()
  const barrier = new SyncBarrier(sync)
  const first = barrier.covering()
  const waiting = [barrier.covering(), barrier.covering(), barrier.covering()]
  started[0]?.finish()
  await first
  await new Promise((resolve) => setImmediate(resolve))
  assert.equal(started.length, 2)
  started[1]?.finish()
  await Promise.all(waiting)
  assert.equal(started.length, 2)
  await barrier.idle()
})

test('a failed sync rejects its callers, and the next caller gets a new sync', async () => {
  const { started, sync } = controlledSync()
  const barrier = new SyncBarrier(sync)
  const failing = barrier.covering()
  started[0]?.finish(new Error('EIO'))
  await assert.rejects(failing, /EIO/)
  const later = barrier.covering()
  assert.equal(started.length, 2)
  started[1]?.finish()
  await later
})
