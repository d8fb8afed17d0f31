import { mkdirSync } from 'node:fs'
import { dirname } from 'node:path'
import Database from 'better-sqlite3'

/** SQLITE_SYNCHRONOUS: `full` is durable; `off` exists to measure what durability costs. */
export type SqliteSynchronous = 'full' | 'off'

/** What one connection does at commit: sync the WAL (FULL), leave syncing to its caller (NORMAL), or never sync (OFF). */
export type CommitSync = 'FULL' | 'NORMAL' | 'OFF'
const PRAGMA_VALUE: Record<CommitSync, number> = { OFF: 0, NORMAL: 1, FULL: 2 }

const BUSY_TIMEOUT_MS = 5000

export class SqliteSettingsError extends Error {}

/** Opens a connection, creating the file's folder, and checks the journal mode and commit sync it got. */
export function openDatabase (path: string, commitSync: CommitSync): Database.Database {
  if (path !== ':memory:') mkdirSync(dirname(path), { recursive: true })
  const db = new Database(path)
  db.pragma(`busy_timeout = ${BUSY_TIMEOUT_MS}`)
  db.pragma('journal_mode = WAL')
  // better-sqlite3 is built with WAL defaulting to synchronous=NORMAL, which can lose the
  // last commits on power loss unless whoever commits syncs the WAL itself.
  db.pragma(`synchronous = ${commitSync}`)
  db.pragma('foreign_keys = ON')
  const journalMode = db.pragma('journal_mode', { simple: true })
  const actual = db.pragma('synchronous', { simple: true })
  if ((journalMode !== 'wal' && path !== ':memory:') || actual !== PRAGMA_VALUE[commitSync]) {
    db.close()
    throw new SqliteSettingsError(`SQLite at ${path} runs journal_mode=${String(journalMode)}, synchronous=${String(actual)}; WAL with synchronous=${commitSync} is required`)
  }
  return db
}
