import { mkdirSync } from 'node:fs'
import { dirname } from 'node:path'
import Database from 'better-sqlite3'

/** SQLITE_SYNCHRONOUS: `full` is durable; `off` exists to measure what durability costs. */
export type SqliteSynchronous = 'full' | 'off'

/** What one connection does at commit: sync the WAL (FULL), leave syncing to its caller (NORMAL), or never sync (OFF). */
export type CommitSync = 'FULL' | 'NORMAL' | 'OFF'
const PRAGMA_VALUE: Record<CommitSync, number> = { OFF: 0, NORMAL: 1, FULL: 2 }

const BUSY_TIMEOUT_MS = 5000

/**
 * SQLite's own page cache per connection. better-sqlite3 builds SQLite with 16 MB; 2 MB (SQLite's
 * usual default) holds every interior page of a 1,000,000-animal catalogue, and leaves the rest to
 * the operating system's file cache, outside the process's memory: random reads over a million
 * animals peaked 10-15 MB lower, as fast.
 */
const PAGE_CACHE_KIB = 2048

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
  db.pragma(`cache_size = -${PAGE_CACHE_KIB}`)
  const journalMode = db.pragma('journal_mode', { simple: true })
  const actual = db.pragma('synchronous', { simple: true })
  if ((journalMode !== 'wal' && path !== ':memory:') || actual !== PRAGMA_VALUE[commitSync]) {
    db.close()
    throw new SqliteSettingsError(`SQLite at ${path} runs journal_mode=${String(journalMode)}, synchronous=${String(actual)}; WAL with synchronous=${commitSync} is required`)
  }
  return db
}
