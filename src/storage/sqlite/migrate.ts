import type Database from 'better-sqlite3'
import { SQLITE_MIGRATIONS } from './migrations.js'

/** Applies the pending migrations, each in its own transaction; returns the versions applied. */
export function applyMigrations (db: Database.Database): number[] {
  db.exec('CREATE TABLE IF NOT EXISTS schema_migrations (version INTEGER PRIMARY KEY, name TEXT NOT NULL, applied_at INTEGER NOT NULL)')
  const applied: number[] = []
  for (const migration of SQLITE_MIGRATIONS) {
    // IMMEDIATE takes the write lock first, so two processes migrating at once take turns.
    db.transaction(() => {
      const done = db.prepare('SELECT 1 FROM schema_migrations WHERE version = ?').get(migration.version)
      if (done) return
      db.exec(migration.sql)
      db.prepare('INSERT INTO schema_migrations (version, name, applied_at) VALUES (?, ?, ?)')
        .run(migration.version, migration.name, Date.now())
      applied.push(migration.version)
    }).immediate()
  }
  return applied
}
