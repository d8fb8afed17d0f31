import type Database from 'better-sqlite3'
import { decideClaim } from '../../core/idempotency.js'
import type { IdempotencyClaim, IdempotencyRepository } from '../store.js'
import { preparedOnFirstUse } from './statements.js'

const prepare = (db: Database.Database) => ({
  insertClaim: db.prepare('INSERT INTO idempotency_keys (api_key_id, idempotency_key, fingerprint, created_at) VALUES (?, ?, ?, ?) ON CONFLICT DO NOTHING'),
  claimByKey: db.prepare('SELECT fingerprint, pet_id AS petId, created_at AS createdAt FROM idempotency_keys WHERE api_key_id = ? AND idempotency_key = ?'),
  renewClaim: db.prepare('UPDATE idempotency_keys SET fingerprint = ?, pet_id = NULL, created_at = ? WHERE api_key_id = ? AND idempotency_key = ?'),
  releaseClaim: db.prepare('DELETE FROM idempotency_keys WHERE api_key_id = ? AND idempotency_key = ? AND pet_id IS NULL'),
  purgeClaims: db.prepare('DELETE FROM idempotency_keys WHERE created_at < ?')
})

export function idempotencyRepository (db: Database.Database): IdempotencyRepository {
  const sql = preparedOnFirstUse(db, prepare)
  return {
    claim: async ({ apiKeyId, key }, fingerprint, { now, expiredBefore, abandonedBefore }) => db.transaction((): IdempotencyClaim => {
      if (sql().insertClaim.run(apiKeyId, key, fingerprint, now.getTime()).changes === 1) return { outcome: 'claimed' }
      const stored = sql().claimByKey.get(apiKeyId, key) as { fingerprint: string, petId: number | null, createdAt: number }
      const decision = decideClaim(stored, fingerprint, { expiredBefore: expiredBefore.getTime(), abandonedBefore: abandonedBefore.getTime() })
      if (decision === 'reclaim') {
        sql().renewClaim.run(fingerprint, now.getTime(), apiKeyId, key)
        return { outcome: 'claimed' }
      }
      return decision === 'completed' ? { outcome: 'completed', petId: stored.petId as number } : { outcome: decision }
    }).immediate(),
    release: async ({ apiKeyId, key }) => { sql().releaseClaim.run(apiKeyId, key) },
    purgeCreatedBefore: async (date) => sql().purgeClaims.run(date.getTime()).changes
  }
}
