import type Database from 'better-sqlite3'
import { KEY_INVALIDATIONS_KEPT_MS, MAX_INVALIDATIONS_READ, type KeyInvalidations } from '../store.js'
import { preparedOnFirstUse } from './statements.js'

const prepare = (db: Database.Database) => ({
  bumpRevocations: db.prepare("UPDATE counters SET value = value + 1 WHERE name = 'key_revocations' RETURNING value").pluck(),
  insertInvalidation: db.prepare('INSERT INTO key_invalidations (seq, key_id, created_at) VALUES (?, ?, ?)'),
  purgeInvalidations: db.prepare('DELETE FROM key_invalidations WHERE created_at < ?'),
  invalidatedKeyIds: db.prepare('SELECT key_id FROM key_invalidations WHERE seq > ? AND seq <= ? ORDER BY seq').pluck(),
  revocationMarker: db.prepare("SELECT value FROM counters WHERE name = 'key_revocations'").pluck()
})

/** The numbered changes of keys (revocations, rolls) that other instances read to forget what they verified. */
export interface KeyInvalidationLog {
  /** Numbers the key's invalidation and forgets those older than they are kept; call inside the change's transaction. */
  record (keyId: string, now: number): void
  marker (): number
  since (marker: number): KeyInvalidations
}

export function keyInvalidationLog (db: Database.Database): KeyInvalidationLog {
  const sql = preparedOnFirstUse(db, prepare)
  const marker = (): number => sql().revocationMarker.get() as number
  return {
    record: (keyId, now) => {
      sql().insertInvalidation.run(sql().bumpRevocations.get() as number, keyId, now)
      sql().purgeInvalidations.run(now - KEY_INVALIDATIONS_KEPT_MS)
    },
    marker,
    since: (since) => {
      const current = marker()
      if (current === since) return { marker: since, keyIds: [] }
      if (current < since || current - since > MAX_INVALIDATIONS_READ) return { marker: current, keyIds: undefined }
      const keyIds = sql().invalidatedKeyIds.all(since, current) as string[]
      return { marker: current, keyIds: keyIds.length === current - since ? keyIds : undefined }
    }
  }
}
