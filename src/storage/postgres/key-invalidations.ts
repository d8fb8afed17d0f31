import type pg from 'pg'
import { KEY_INVALIDATIONS_KEPT_MS, MAX_INVALIDATIONS_READ, type KeyInvalidations } from '../store.js'
import type { Connection } from './connection.js'

const MARKER = "SELECT value FROM counters WHERE name = 'key_revocations'"

/** Numbers the key's invalidation; the counter row stays locked until commit, so numbers become visible in their order. */
export async function recordInvalidation (client: pg.PoolClient, keyId: string, now: number): Promise<void> {
  await client.query(`WITH next AS (UPDATE counters SET value = value + 1 WHERE name = 'key_revocations' RETURNING value)
    INSERT INTO key_invalidations (seq, key_id, created_at) SELECT value, $1, $2 FROM next`, [keyId, now])
  await client.query('DELETE FROM key_invalidations WHERE created_at < $1', [now - KEY_INVALIDATIONS_KEPT_MS])
}

export async function revocationMarker ({ query }: Connection): Promise<number> {
  return Number((await query<{ value: string }>(MARKER))[0]?.value)
}

/** Prepared on each connection: every instance polls it. */
export async function invalidationsSince ({ query }: Connection, marker: number): Promise<KeyInvalidations> {
  const current = Number((await query<{ value: string }>(MARKER, [], 'revocation-marker'))[0]?.value)
  if (current === marker) return { marker, keyIds: [] }
  if (current < marker || current - marker > MAX_INVALIDATIONS_READ) return { marker: current, keyIds: undefined }
  const rows = await query<{ key_id: string }>('SELECT key_id FROM key_invalidations WHERE seq > $1 AND seq <= $2 ORDER BY seq', [marker, current])
  return { marker: current, keyIds: rows.length === current - marker ? rows.map((row) => row.key_id) : undefined }
}
