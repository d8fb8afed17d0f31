import { test } from 'node:test'
import assert from 'node:assert/strict'
import pg from 'pg'
import { POSTGRES_MIGRATIONS } from '../../src/storage/postgres/migrations.js'
import { openPostgresStore } from '../../src/storage/postgres/postgres-store.js'
import { createTestSchema, postgresAvailable } from '../helpers/postgres.js'

test('PostgreSQL migrations 4 to 6 keep keys (with both scopes), counts and the revocation marker of a version 3 database', { timeout: 60_000 }, async (t) => {
  if (!await postgresAvailable()) {
    t.skip('PostgreSQL is not reachable')
    return
  }
  const url = await createTestSchema(t)
  const client = new pg.Client({ connectionString: url })
  await client.connect()
  try {
    await client.query('CREATE TABLE schema_migrations (version INT PRIMARY KEY, name TEXT NOT NULL, applied_at BIGINT NOT NULL)')
    for (const migration of POSTGRES_MIGRATIONS.filter(({ version }) => version <= 3)) {
      await client.query(migration.sql)
      await client.query('INSERT INTO schema_migrations (version, name, applied_at) VALUES ($1, $2, 0)', [migration.version, migration.name])
    }
    await client.query(`
      INSERT INTO accounts (id, email, name, created_at) VALUES (1, 'old@example.com', NULL, 0);
      INSERT INTO api_keys (id, account_id, label, prefix, hash, created_at, revoked_at) VALUES
        ('key_live000000000001', 1, 'live', 'ask_aaaaaaaa', 'hash-live', 1, NULL),
        ('key_gone000000000001', 1, 'gone', 'ask_bbbbbbbb', 'hash-gone', 2, 5);
      UPDATE counters SET value = 7 WHERE name = 'key_revocations';
      INSERT INTO login_attempts (subject, attempts, window_started_at) VALUES ('account:old', 4, ${Date.now()});
    `)
  } finally {
    await client.end()
  }

  const store = openPostgresStore(url, { poolSize: 2, onError: () => {} })
  t.after(() => store.close())
  assert.deepEqual(await store.migrate(), POSTGRES_MIGRATIONS.map(({ version }) => version).filter((version) => version >= 4), 'every later version')
  assert.deepEqual((await store.apiKeys.listByAccount(1)).map(({ scopes, expiresAt, rolledTo }) => ({ scopes, expiresAt, rolledTo })),
    [1, 2].map(() => ({ scopes: ['animals:read', 'animals:write'], expiresAt: null, rolledTo: null })), 'migration 5: keys made before scopes keep both, and do not expire')
  assert.equal(await store.apiKeys.revocationMarker(), 7)
  assert.deepEqual((await store.apiKeys.listByAccount(1)).map(({ id, live }) => ({ id, live })), [{ id: 'key_live000000000001', live: true }, { id: 'key_gone000000000001', live: false }])
  assert.equal(await store.apiKeys.revoke('key_live000000000001'), 'revoked')
  assert.deepEqual(await store.apiKeys.invalidationsSince(7), { marker: 8, keyIds: ['key_live000000000001'] })
  const now = new Date()
  assert.equal((await store.loginAttempts.record(['account:old'], now, new Date(now.getTime() - 60_000)))[0]?.attempts, 5, 'counts survive')
  assert.deepEqual(await store.loginAttempts.recordUnlessLocked('account:old', now, { forgetBefore: new Date(0), lockMsAfter: () => 0 }), { allowed: true, attempts: 6 })
})

test('PostgreSQL audit events are append-only: the database refuses to change, delete or truncate them', { timeout: 60_000 }, async (t) => {
  if (!await postgresAvailable()) {
    t.skip('PostgreSQL is not reachable')
    return
  }
  const url = await createTestSchema(t)
  const store = openPostgresStore(url, { poolSize: 2, onError: () => {} })
  t.after(() => store.close())
  await store.migrate()
  await store.audit.append({ at: new Date(), event: 'key_created', actor: 'cli', accountId: 1, keyId: 'key_x', address: null, detail: null })
  const client = new pg.Client({ connectionString: url })
  await client.connect()
  t.after(() => client.end())
  await assert.rejects(client.query("UPDATE audit_events SET detail = 'changed'"), /append-only/)
  await assert.rejects(client.query('DELETE FROM audit_events'), /append-only/)
  await assert.rejects(client.query('TRUNCATE audit_events'), /append-only/)
  await assert.rejects(client.query('TRUNCATE audit_events RESTART IDENTITY CASCADE'), /append-only/)
  assert.equal((await client.query('SELECT count(*)::int AS n FROM audit_events')).rows[0]?.n, 1)
})
