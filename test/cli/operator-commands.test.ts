import { join } from 'node:path'
import { describe, test } from 'node:test'
import assert from 'node:assert/strict'
import { openPostgresStore } from '../../src/storage/postgres/postgres-store.js'
import { openSqliteStore } from '../../src/storage/sqlite/sqlite-store.js'
import type { Store } from '../../src/storage/store.js'
import { tempDir } from '../helpers/build-app.js'
import { createTestSchema, postgresAvailable } from '../helpers/postgres.js'
import { cliEnv, runCli } from '../helpers/spawn-cli.js'

async function countPets (store: Store): Promise<{ count: number, statuses: Set<string | undefined> }> {
  let afterId = 0
  let count = 0
  const statuses = new Set<string | undefined>()
  for (;;) {
    const page = await store.pets.listPage({ status: undefined, afterId, limit: 100 })
    for (const pet of page.pets) statuses.add(pet.status)
    count += page.pets.length
    const lastId = page.pets.at(-1)?.id
    if (!page.hasMore || lastId === undefined) return { count, statuses }
    afterId = lastId
  }
}

// The tests of each command use databases of their own: they run side by side.
describe('animal-store seed', { concurrency: true }, () => {
  test('loads the asked number of demo animals with plain progress lines when not on a terminal (SQLite)', { timeout: 60_000 }, async (t) => {
    const dbPath = join(tempDir(t), 'seed.sqlite')
    const result = await runCli(['seed', '--count', '12345'], cliEnv(dbPath))
    assert.equal(result.code, 0, result.stderr)
    assert.match(result.stdout, /^Seeded 12345 animals in [\d.]+ s\.$/m)
    assert.match(result.stderr, /seeded 12345\/12345 \(100%\)/)
    assert.doesNotMatch(result.stderr, /\r/, 'no terminal redraws in a log')
    const store = openSqliteStore(dbPath)
    t.after(() => store.close())
    const { count, statuses } = await countPets(store)
    assert.equal(count, 12345)
    assert.deepEqual([...statuses].sort(), ['available', 'pending', 'sold', undefined].sort())
  })

  test('loads demo animals on PostgreSQL too', { timeout: 60_000 }, async (t) => {
    if (!await postgresAvailable()) {
      t.skip('PostgreSQL is not reachable')
      return
    }
    const databaseUrl = await createTestSchema(t)
    const result = await runCli(['seed', '--count', '12001'], { PATH: process.env.PATH ?? '', DATABASE_URL: databaseUrl })
    assert.equal(result.code, 0, result.stderr)
    const store = openPostgresStore(databaseUrl, { poolSize: 1, onError: () => {} })
    t.after(() => store.close())
    assert.equal((await countPets(store)).count, 12001)
    const created = await store.pets.insert({ name: 'after the seed', categoryId: 1 })
    assert.equal(created.id, 12002, 'ids continue after the seeded ones')
  })

  test('refuses a missing or invalid --count with exit 1', async (t) => {
    const env = cliEnv(join(tempDir(t), 'seed.sqlite'))
    for (const args of [['seed'], ['seed', '--count', '0'], ['seed', '--count', 'ten'], ['seed', '--count', '-5']]) {
      const result = await runCli(args, env)
      assert.equal(result.code, 1, args.join(' '))
      assert.match(result.stderr, /--count/)
    }
  })
})

describe('animal-store config', { concurrency: true }, () => {
  test('prints every variable with its effective value and masks secrets', async (t) => {
    const env = {
      ...cliEnv(join(tempDir(t), 'x.sqlite')),
      DATABASE_URL: 'postgres://app:s3cret-password@db.internal:5432/store',
      REDIS_URL: 'redis://:redis-secret@cache:6379',
      METRICS_TOKEN: 'metrics-secret-0123456789',
      PORT: '9090'
    }
    const result = await runCli(['config'], env)
    assert.equal(result.code, 0, result.stderr)
    for (const secret of ['s3cret-password', 'redis-secret', 'metrics-secret']) assert.doesNotMatch(result.stdout, new RegExp(secret))
    assert.match(result.stdout, /^PORT\s+9090$/m)
    assert.match(result.stdout, /^HOST\s+0\.0\.0\.0 {2}\(default\)$/m)
    assert.match(result.stdout, /^DATABASE_URL\s+postgres:\/\/app:\*\*\*\*@db\.internal:5432\/store$/m)
    assert.match(result.stdout, /^METRICS_TOKEN\s+\*\*\*\*$/m)
    const json = await runCli(['config', '--json'], env)
    const parsed = JSON.parse(json.stdout) as Record<string, string>
    assert.equal(parsed.PORT, '9090')
    assert.equal(parsed.METRICS_TOKEN, '****')
  })

  test('names the bad variable and exits 1', async () => {
    const result = await runCli(['config'], { PATH: process.env.PATH ?? '', PORT: 'eighty' })
    assert.equal(result.code, 1)
    assert.match(result.stderr, /PORT="eighty"/)
  })
})

describe('animal-store backup', { concurrency: true }, () => {
  test('writes a consistent copy of the SQLite database while a store has it open, and refuses to overwrite', { timeout: 60_000 }, async (t) => {
    const dir = tempDir(t)
    const dbPath = join(dir, 'live.sqlite')
    assert.equal((await runCli(['seed', '--count', '2000'], cliEnv(dbPath))).code, 0)
    const live = openSqliteStore(dbPath)
    t.after(() => live.close())
    await live.pets.insert({ name: 'written before the backup', categoryId: 1 })
    const target = join(dir, 'backups', 'copy.sqlite')
    const result = await runCli(['backup', '--to', target], cliEnv(dbPath))
    assert.equal(result.code, 0, result.stderr)
    const copy = openSqliteStore(target)
    t.after(() => copy.close())
    assert.equal((await countPets(copy)).count, 2001)
    const again = await runCli(['backup', '--to', target], cliEnv(dbPath))
    assert.equal(again.code, 1)
    assert.match(again.stderr, /exists/)
  })

  test('points PostgreSQL users to pg_dump', async (t) => {
    if (!await postgresAvailable()) {
      t.skip('PostgreSQL is not reachable')
      return
    }
    const result = await runCli(['backup', '--to', join(tempDir(t), 'x.sqlite')], { PATH: process.env.PATH ?? '', DATABASE_URL: await createTestSchema(t) })
    assert.equal(result.code, 1)
    assert.match(result.stderr, /pg_dump/)
  })
})
