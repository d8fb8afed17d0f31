import { test } from 'node:test'
import assert from 'node:assert/strict'
import { execFile } from 'node:child_process'
import { mkdirSync, symlinkSync } from 'node:fs'
import { availableParallelism } from 'node:os'
import { join } from 'node:path'
import { pathToFileURL } from 'node:url'
import { promisify } from 'node:util'
import Database from 'better-sqlite3'
import { loadConfig } from '../../src/config.js'
import { openStore } from '../../src/storage/open-store.js'
import { tempDir } from '../helpers/build-app.js'
import { canPin } from '../helpers/taskset.js'

const run = promisify(execFile)
// The child resolves tsx from the checkout, wherever the tests were started.
const ROOT = join(import.meta.dirname, '..', '..')
const PET_WRITES_MODULE = pathToFileURL(join(ROOT, 'src', 'storage', 'sqlite', 'pet-writes.ts')).href

// synchronous is a setting of the store's own connection; the store reads it back at open and
// refuses to run with anything but the configured value, so opening and writing is the check.
test('SQLite syncs every commit unless SQLITE_SYNCHRONOUS=off, which is warned about at open', async (t) => {
  const dir = tempDir(t)
  for (const setting of ['full', 'off'] as const) {
    const warnings: string[] = []
    const store = openStore(loadConfig({ DATABASE_URL: `sqlite:${join(dir, `${setting}.sqlite`)}`, SQLITE_SYNCHRONOUS: setting }), { onWarning: (message) => warnings.push(message) })
    t.after(() => store.close())
    await store.migrate()
    assert.deepEqual(await store.pets.insert({ name: 'Rex', categoryId: 1, status: 'available' }), { id: 1 })
    assert.equal(warnings.filter((message) => /SQLITE_SYNCHRONOUS=off/.test(message)).length, setting === 'off' ? 1 : 0, setting)
  }
})

test('creates on a database reached through a symbolic link sync the log beside the real file', async (t) => {
  const dir = tempDir(t)
  mkdirSync(join(dir, 'real'))
  const store = openStore(loadConfig({ DATABASE_URL: `sqlite:${join(dir, 'real', 'pets.sqlite')}` }))
  await store.migrate()
  await store.close()
  symlinkSync(join(dir, 'real', 'pets.sqlite'), join(dir, 'link.sqlite'))
  const linked = openStore(loadConfig({ DATABASE_URL: `sqlite:${join(dir, 'link.sqlite')}` }))
  t.after(() => linked.close())
  const created = await Promise.all(Array.from({ length: 3 }, async () => await linked.pets.insert({ name: 'Rex', categoryId: 1, status: 'available' })))
  assert.deepEqual(created.map(({ id }) => id).sort(), [1, 2, 3])
})

test('creates wait for another connection\'s write lock without blocking the event loop, then commit', async (t) => {
  const path = join(tempDir(t), 'pets.sqlite')
  const store = openStore(loadConfig({ DATABASE_URL: `sqlite:${path}` }))
  t.after(() => store.close())
  await store.migrate()
  // Another writer (another worker process, or the CLI) holds the write lock for a while.
  const other = new Database(path)
  t.after(() => other.close())
  other.exec('BEGIN IMMEDIATE')
  const created = store.pets.insert({ name: 'Rex', categoryId: 1, status: 'available' })
  let loopTurns = 0
  await new Promise<void>((resolve) => {
    const turn = (): void => {
      if (++loopTurns === 20) resolve()
      else setTimeout(turn, 1)
    }
    setTimeout(turn, 1)
  })
  assert.equal(loopTurns, 20, 'timers fire while the create waits for the lock')
  other.exec('COMMIT')
  assert.deepEqual(await created, { id: 1 })
  assert.deepEqual(await store.pets.findById(1), { id: 1, name: 'Rex', categoryId: 1, status: 'available' })
})

const SQLITE_STORE_MODULE = pathToFileURL(join(ROOT, 'src', 'storage', 'sqlite', 'sqlite-store.ts')).href

/**
 * Runs batches of 5 and 40 creates (below and above the size from which a batch is synced on the
 * event loop itself on one core) in a process on `cores`, and returns, per batch, its commits and
 * syncs: the placement of the sync follows the cores the process may run on.
 */
async function batchesOn (cores: string, path: string): Promise<Array<{ creates: number, commits: number, syncs: number, ids: number }>> {
  const script = `
    import { openSqliteStore } from '${SQLITE_STORE_MODULE}'
    const store = openSqliteStore(${JSON.stringify(path)})
    await store.migrate()
    await store.pets.insert({ name: 'first', categoryId: 1 })
    const results = []
    for (const creates of [5, 40]) {
      const before = store.groupCommitStats()
      const created = await Promise.all(Array.from({ length: creates }, (_, index) => store.pets.insert({ name: 'pet ' + index, categoryId: 1 })))
      const after = store.groupCommitStats()
      results.push({ creates, commits: after.commits - before.commits, syncs: after.syncs - before.syncs, ids: new Set(created.map(({ id }) => id)).size })
    }
    await store.close()
    console.log(JSON.stringify(results))`
  const { stdout } = await run('taskset', ['-c', cores, process.execPath, '--import', 'tsx', '--input-type=module', '-e', script], { cwd: ROOT })
  return JSON.parse(stdout.trim()) as Array<{ creates: number, commits: number, syncs: number, ids: number }>
}

for (const oneCore of [true, false]) {
  test(`a batch of creates is acknowledged by one sync of the log, small or large, in a process ${oneCore ? 'pinned to one core (large batches synced on the event loop)' : 'with every core (synced on the thread pool)'}`, { skip: !canPin && 'taskset (util-linux) is not installed' }, async (t) => {
    const cores = oneCore ? '0' : `0-${availableParallelism() - 1}`
    for (const batch of await batchesOn(cores, join(tempDir(t), 'pets.sqlite'))) {
      assert.equal(batch.commits, 1, `${batch.creates} creates in one transaction`)
      assert.equal(batch.syncs, 1, `${batch.creates} creates acknowledged by one sync`)
      assert.equal(batch.ids, batch.creates, 'each create its own id')
    }
  })
}

test('large batches are synced on the event loop only in a process pinned to one core', { skip: !canPin && 'taskset (util-linux) is not installed' }, async () => {
  const placement = async (cores: string): Promise<string> => {
    const { stdout } = await run('taskset', ['-c', cores, process.execPath, '--import', 'tsx', '--input-type=module', '-e',
      `import { syncsLargeBatchesOnLoop } from '${PET_WRITES_MODULE}'; console.log(syncsLargeBatchesOnLoop())`], { cwd: ROOT })
    return stdout.trim()
  }
  assert.equal(await placement('0'), 'true')
  if (availableParallelism() > 1) assert.equal(await placement(`0-${availableParallelism() - 1}`), 'false')
})
