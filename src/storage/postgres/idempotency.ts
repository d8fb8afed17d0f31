import type pg from 'pg'
import { decideClaim } from '../../core/idempotency.js'
import type { IdempotencyClaim, IdempotencyRepository } from '../store.js'
import type { Connection } from './connection.js'

type ClaimArguments = Parameters<IdempotencyRepository['claim']>

export function idempotencyRepository ({ query, transaction }: Connection): IdempotencyRepository {
  return {
    claim: async (ref, fingerprint, window) => transaction(async (client) => await claimKey(client, ref, fingerprint, window)),
    release: async ({ apiKeyId, key }) => {
      await query('DELETE FROM idempotency_keys WHERE api_key_id = $1 AND idempotency_key = $2 AND pet_id IS NULL', [apiKeyId, key])
    },
    purgeCreatedBefore: async (date) => {
      const deleted = await query<{ api_key_id: string }>('DELETE FROM idempotency_keys WHERE created_at < $1 RETURNING api_key_id', [date.getTime()])
      return deleted.length
    }
  }
}

async function claimKey (client: pg.PoolClient, { apiKeyId, key }: ClaimArguments[0], fingerprint: string, { now, expiredBefore, abandonedBefore }: ClaimArguments[2]): Promise<IdempotencyClaim> {
  const inserted = await client.query(
    'INSERT INTO idempotency_keys (api_key_id, idempotency_key, fingerprint, created_at) VALUES ($1, $2, $3, $4) ON CONFLICT DO NOTHING',
    [apiKeyId, key, fingerprint, now.getTime()])
  if (inserted.rowCount === 1) return { outcome: 'claimed' }
  const { rows } = await client.query<{ fingerprint: string, pet_id: string | null, created_at: string }>(
    'SELECT fingerprint, pet_id, created_at FROM idempotency_keys WHERE api_key_id = $1 AND idempotency_key = $2 FOR UPDATE', [apiKeyId, key])
  const row = rows[0]
  // Deleted by a purge between the two statements: a new claim on the next try.
  if (row === undefined) return { outcome: 'in_flight' }
  const stored = { fingerprint: row.fingerprint, petId: row.pet_id === null ? null : Number(row.pet_id), createdAt: Number(row.created_at) }
  const decision = decideClaim(stored, fingerprint, { expiredBefore: expiredBefore.getTime(), abandonedBefore: abandonedBefore.getTime() })
  if (decision === 'reclaim') {
    await client.query('UPDATE idempotency_keys SET fingerprint = $1, pet_id = NULL, created_at = $2 WHERE api_key_id = $3 AND idempotency_key = $4',
      [fingerprint, now.getTime(), apiKeyId, key])
    return { outcome: 'claimed' }
  }
  return decision === 'completed' ? { outcome: 'completed', petId: stored.petId as number } : { outcome: decision }
}
