import type Database from 'better-sqlite3'

/** A repository's statements, prepared on first use: the tables exist only after migrate(). */
export function preparedOnFirstUse<T> (db: Database.Database, prepare: (db: Database.Database) => T): () => T {
  let prepared: T | undefined
  return () => (prepared ??= prepare(db))
}
