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
  assert.deepEqual(await store.migrate(), SQLITE_MIGRATIONS.map(({ version }) => version).filter((version) => version >= 4), 'every later version')

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

test('migrations 5 and 6 keep keys (with both scopes), counts and the revocation marker of a version 4 database, and everything built on it works', async (t) => {
  const path = join(tempDir(t), 'version-4.sqlite')
  const db = new Database(path)
  db.pragma('journal_mode = WAL')
  db.exec('CREATE TABLE schema_migrations (version INTEGER PRIMARY KEY, name TEXT NOT NULL, applied_at INTEGER NOT NULL)')
  for (const migration of SQLITE_MIGRATIONS.filter(({ version }) => version <= 4)) {
    db.exec(migration.sql)
    db.prepare('INSERT INTO schema_migrations (version, name, applied_at) VALUES (?, ?, ?)').run(migration.version, migration.name, 0)
  }
  db.exec(`
    INSERT INTO accounts (id, email, name, created_at) VALUES (1, 'old@example.com', NULL, 0);
    INSERT INTO api_keys (id, account_id, label, prefix, hash, created_at, revoked_at) VALUES
      ('key_live000000000001', 1, 'live', 'ask_aaaaaaaa', 'hash-live', 1, NULL),
      ('key_gone000000000001', 1, 'gone', 'ask_bbbbbbbb', 'hash-gone', 2, 5);
    UPDATE counters SET value = 7 WHERE name = 'key_revocations';
    INSERT INTO login_attempts (subject, attempts, window_started_at) VALUES ('account:old', 4, ${Date.now()});
  `)
  db.close()

  const store = openSqliteStore(path)
  t.after(() => store.close())
  assert.deepEqual(await store.migrate(), SQLITE_MIGRATIONS.map(({ version }) => version).filter((version) => version >= 5), 'every later version')
  assert.deepEqual((await store.apiKeys.listByAccount(1)).map(({ scopes, expiresAt, rolledTo }) => ({ scopes, expiresAt, rolledTo })),
    [1, 2].map(() => ({ scopes: ['animals:read', 'animals:write'], expiresAt: null, rolledTo: null })), 'migration 6: keys made before scopes keep both, and do not expire')
  assert.equal(await store.apiKeys.revocationMarker(), 7, 'instances keep reading from the marker they knew')
  assert.deepEqual(await store.apiKeys.invalidationsSince(7), { marker: 7, keyIds: [] })
  assert.deepEqual((await store.apiKeys.listByAccount(1)).map(({ id, live }) => ({ id, live })), [{ id: 'key_live000000000001', live: true }, { id: 'key_gone000000000001', live: false }])
  assert.equal((await store.apiKeys.pageByAccount(1, { live: true, limit: 10, offset: 0 })).total, 1)
  assert.equal(await store.apiKeys.revoke('key_live000000000001'), 'revoked')
  assert.deepEqual(await store.apiKeys.invalidationsSince(7), { marker: 8, keyIds: ['key_live000000000001'] })
  const now = new Date()
  assert.equal((await store.loginAttempts.record(['account:old'], now, new Date(now.getTime() - 60_000)))[0]?.attempts, 5, 'counts survive')
  assert.deepEqual(await store.loginAttempts.recordUnlessLocked('account:old', now, { forgetBefore: new Date(0), lockMsAfter: () => 0 }), { allowed: true, attempts: 6 })

  const inspect = new Database(path, { readonly: true })
  t.after(() => inspect.close())
  const plan = inspect.prepare('EXPLAIN QUERY PLAN SELECT count(*) FROM api_keys WHERE account_id = 1 AND revoked_at IS NULL').all() as Array<{ detail: string }>
  assert.match(plan.map(({ detail }) => detail).join('\n'), /USING COVERING INDEX api_keys_account_revoked/)
})

test('audit events are append-only: the database refuses to change or delete one', async (t) => {
  const path = join(tempDir(t), 'audit.sqlite')
  const store = openSqliteStore(path)
  t.after(() => store.close())
  await store.migrate()
  await store.audit.append({ at: new Date(), event: 'key_created', actor: 'cli', accountId: 1, keyId: 'key_x', address: null, detail: null })
  const db = new Database(path)
  t.after(() => db.close())
  assert.throws(() => db.prepare("UPDATE audit_events SET detail = 'changed'").run(), /append-only/)
  // SQLite has no TRUNCATE: its equivalent, a DELETE without WHERE, skips the truncate optimisation when a DELETE trigger exists.
  assert.throws(() => db.prepare('DELETE FROM audit_events').run(), /append-only/)
  assert.throws(() => db.prepare('DELETE FROM audit_events WHERE 1').run(), /append-only/)
  assert.equal(db.prepare('SELECT count(*) FROM audit_events').pluck().get(), 1)
})
