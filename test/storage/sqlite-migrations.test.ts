import { test } from 'node:test'
import assert from 'node:assert/strict'
import { join } from 'node:path'
import Database from 'better-sqlite3'
import { PET_STATUSES, type PetStatus } from '../../src/core/pets.js'
import { SQLITE_MIGRATIONS } from '../../src/storage/sqlite/migrations.js'
import { openSqliteStore } from '../../src/storage/sqlite/sqlite-store.js'
import { tempDir } from '../helpers/build-app.js'

const STATUS_OF = (id: number): PetStatus | null => id % 4 === 0 ? null : PET_STATUSES[id % 3] ?? null

/** A database as version 3 of the schema left it, holding `count` animals of every status and none. */
function databaseAtVersion3 (path: string, count: number): void {
  const db = new Database(path)
  db.pragma('journal_mode = WAL')
  db.exec('CREATE TABLE schema_migrations (version INTEGER PRIMARY KEY, name TEXT NOT NULL, applied_at INTEGER NOT NULL)')
  for (const migration of SQLITE_MIGRATIONS.filter(({ version }) => version <= 3)) {
    db.exec(migration.sql)
    db.prepare('INSERT INTO schema_migrations (version, name, applied_at) VALUES (?, ?, ?)').run(migration.version, migration.name, 0)
  }
  const insert = db.prepare('INSERT INTO pets (id, name, category_id, status, created_at) VALUES (?, ?, ?, ?, 0)')
  db.transaction(() => { for (let id = 1; id <= count; id++) insert.run(id, `animal ${id}`, id, STATUS_OF(id)) })()
  db.close()
}

test('migration 4 replaces the (status, id) index with one per status, and every status lists as before', async (t) => {
  const path = join(tempDir(t), 'version-3.sqlite')
  const animals = 250
  databaseAtVersion3(path, animals)
  const store = openSqliteStore(path)
  t.after(() => store.close())
  assert.deepEqual(await store.migrate(), [4])

  for (const status of PET_STATUSES) {
    const expected = Array.from({ length: animals }, (_, index) => index + 1).filter((id) => STATUS_OF(id) === status)
    const seen: number[] = []
    let afterId = 0
    for (;;) {
      const page = await store.pets.listPage({ status, afterId, limit: 7 })
      const pets = page.pets
      assert.ok(pets.every((pet) => pet.status === status), `${status} page after ${afterId}: ${JSON.stringify(pets)}`)
      seen.push(...pets.map((pet) => pet.id))
      const lastId = pets.at(-1)?.id ?? afterId
      assert.equal(await store.pets.existsAfter(status, lastId), page.hasMore)
      if (!page.hasMore) break
      afterId = lastId
    }
    assert.deepEqual(seen, expected, `every ${status} animal once, in id order`)
  }

  const inspect = new Database(path, { readonly: true })
  t.after(() => inspect.close())
  const indexes = inspect.prepare("SELECT name FROM sqlite_master WHERE type = 'index' AND tbl_name = 'pets' ORDER BY name").pluck().all()
  assert.deepEqual(indexes, ['pets_available_id', 'pets_pending_id', 'pets_sold_id'])
  const plan = inspect.prepare("EXPLAIN QUERY PLAN SELECT id, name FROM pets WHERE status = 'pending' AND id > 5 ORDER BY id LIMIT 8").all() as Array<{ detail: string }>
  assert.match(plan.map(({ detail }) => detail).join('\n'), /USING INDEX pets_pending_id/)
})
