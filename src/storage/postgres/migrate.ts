import type pg from 'pg'
import type { PoolLike } from './hosts.js'
import type { Transaction } from './connection.js'
import { POSTGRES_MIGRATIONS } from './migrations.js'

/**
 * Applies pending migrations in one transaction that first locks the row of a lock
 * table, so instances starting together take turns and none applies a version twice.
 */
export async function applyMigrations (transaction: Transaction): Promise<number[]> {
  await createBookkeeping(transaction)
  return transaction(async (client) => {
    await client.query("SELECT name FROM schema_migrations_lock WHERE name = 'migrations' FOR UPDATE")
    const { rows } = await client.query<{ version: number }>('SELECT version FROM schema_migrations')
    const done = new Set(rows.map((row) => Number(row.version)))
    const applied: number[] = []
    for (const migration of POSTGRES_MIGRATIONS) {
      if (done.has(migration.version)) continue
      await client.query(migration.sql)
      await client.query('INSERT INTO schema_migrations (version, name, applied_at) VALUES ($1, $2, $3)', [migration.version, migration.name, Date.now()])
      applied.push(migration.version)
    }
    return applied
  })
}

async function createBookkeeping (transaction: Transaction): Promise<void> {
  for (let attempt = 0; ; attempt++) {
    try {
      await transaction(async (client) => {
        await client.query('CREATE TABLE IF NOT EXISTS schema_migrations (version INT PRIMARY KEY, name TEXT NOT NULL, applied_at BIGINT NOT NULL)')
        await client.query('CREATE TABLE IF NOT EXISTS schema_migrations_lock (name TEXT PRIMARY KEY)')
        await client.query("INSERT INTO schema_migrations_lock (name) VALUES ('migrations') ON CONFLICT (name) DO NOTHING")
      })
      return
    } catch (error) {
      // Two instances creating the same table at the same moment: one loses with a
      // unique violation on the catalogue; the table exists now, so try again.
      const code = (error as { code?: string }).code
      if (attempt >= 5 || (code !== '23505' && code !== '42P07')) throw error
    }
  }
}

/**
 * With several hosts, a failover keeps every acknowledged create only if each commit waited for a
 * standby: synchronous_standby_names names one, and synchronous_commit is on (or remote_apply).
 */
export async function warnAboutReplication (pool: PoolLike, warn: (message: string) => void): Promise<void> {
  const { rows: [row] } = await pool.query<{ names: string, commit: string }>({
    text: "SELECT current_setting('synchronous_standby_names') AS names, current_setting('synchronous_commit') AS commit"
  })
  if (row === undefined) return
  if (row.names.trim() === '' || !['on', 'remote_apply'].includes(row.commit)) {
    warn(`PostgreSQL replicates asynchronously (synchronous_standby_names='${row.names}', synchronous_commit=${row.commit}): ` +
      'a failover can lose the creates acknowledged in the last moments before the primary failed. See docs/replication.md.')
  }
}

/** A server running with fsync or synchronous_commit off can lose commits it acknowledged. */
export async function warnAboutDurability (query: <Row extends pg.QueryResultRow>(text: string) => Promise<Row[]>, warn: (message: string) => void): Promise<void> {
  for (const setting of ['fsync', 'synchronous_commit']) {
    const [row] = await query<Record<string, string>>(`SHOW ${setting}`)
    if (row?.[setting] === 'off') {
      warn(`PostgreSQL runs with ${setting}=off: animals acknowledged with 201 can be lost in a crash. Turn it on for production.`)
    }
  }
}
