import type pg from 'pg'
import { DEFAULT_SCOPES, scopesOfText, scopesText } from '../../core/api-keys.js'
import { isLiveKey, liveKeySql } from '../live-keys.js'
import { KeyLimitError, type ApiKeyPage, type ApiKeyRepository, type ApiKeyRow, type RevokeResult, type RollResult } from '../store.js'
import type { Connection } from './connection.js'
import { invalidationsSince, recordInvalidation, revocationMarker } from './key-invalidations.js'
import { insertMail } from './mail-outbox.js'

interface ApiKeyDbRow {
  id: string
  account_id: string
  label: string | null
  prefix: string
  created_at: string
  last_used_at: string | null
  revoked_at: string | null
  scopes: string
  expires_at: string | null
  rolled_to: string | null
}

const API_KEY_COLUMNS = 'id, account_id, label, prefix, created_at, last_used_at, revoked_at, scopes, expires_at, rolled_to'
const INSERT_API_KEY = `INSERT INTO api_keys (id, account_id, label, prefix, hash, created_at, scopes, expires_at) VALUES ($1, $2, $3, $4, $5, $6, $7, $8) RETURNING ${API_KEY_COLUMNS}`

const toDate = (ms: string | null): Date | null => (ms === null ? null : new Date(Number(ms)))

const toApiKey = (row: ApiKeyDbRow): ApiKeyRow => {
  const key = {
    id: row.id,
    accountId: Number(row.account_id),
    label: row.label,
    prefix: row.prefix,
    createdAt: new Date(Number(row.created_at)),
    lastUsedAt: toDate(row.last_used_at),
    revokedAt: toDate(row.revoked_at),
    scopes: scopesOfText(row.scopes),
    expiresAt: toDate(row.expires_at),
    rolledTo: row.rolled_to
  }
  return { ...key, live: isLiveKey(key, Date.now()) }
}

type RollArguments = Parameters<ApiKeyRepository['roll']>

export function apiKeyRepository (db: Connection): ApiKeyRepository {
  const { query, transaction } = db
  const findBy = async (column: 'hash' | 'id', value: string, name?: string): Promise<ApiKeyRow | undefined> => {
    const [row] = await query<ApiKeyDbRow>(`SELECT ${API_KEY_COLUMNS} FROM api_keys WHERE ${column} = $1`, [value], name)
    return row && toApiKey(row)
  }
  return {
    // The account's row stays locked until commit: creations for one account take turns between count and insert.
    create: async (key, { maxLive }, mail) => transaction(async (client): Promise<ApiKeyRow> => {
      const now = Date.now()
      await lockAccountUnderCap(client, key.accountId, maxLive, now)
      const { rows: [row] } = await client.query<ApiKeyDbRow>(INSERT_API_KEY,
        [key.id, key.accountId, key.label, key.prefix, key.hash, now, scopesText(key.scopes ?? DEFAULT_SCOPES), key.expiresAt?.getTime() ?? null])
      if (mail !== undefined) await insertMail(client, mail, now)
      return toApiKey(row as ApiKeyDbRow)
    }),
    roll: async (id, successor, limits) => transaction(async (client) => {
      const result = await rollKey(client, id, successor, limits)
      if (result.outcome === 'rolled' && limits.mail !== undefined) await insertMail(client, limits.mail, Date.now())
      return result
    }),
    expiringUnreminded: async (now, until, minLifetimeMs, limit) => (await query<ApiKeyDbRow>(`SELECT ${API_KEY_COLUMNS} FROM api_keys
      WHERE revoked_at IS NULL AND rolled_to IS NULL AND expiry_reminded_at IS NULL AND expires_at > $1 AND expires_at <= $2
        AND expires_at - created_at > $3 ORDER BY expires_at, id LIMIT $4`, [now.getTime(), until.getTime(), minLifetimeMs, limit])).map(toApiKey),
    remindExpiry: async (id, at, mail) => transaction(async (client) => {
      const { rowCount } = await client.query('UPDATE api_keys SET expiry_reminded_at = $1 WHERE id = $2 AND expiry_reminded_at IS NULL', [at.getTime(), id])
      if (rowCount !== 1) return false
      await insertMail(client, mail, at.getTime())
      return true
    }),
    findByHash: async (hash) => await findBy('hash', hash, 'api-key-by-hash'),
    findById: async (id) => await findBy('id', id),
    listByAccount: async (accountId) =>
      (await query<ApiKeyDbRow>(`SELECT ${API_KEY_COLUMNS} FROM api_keys WHERE account_id = $1 ORDER BY created_at, id`, [accountId])).map(toApiKey),
    pageByAccount: async (accountId, page) => await pageByAccount(db, accountId, page),
    revoke: async (id) => transaction(async (client): Promise<RevokeResult> => {
      const { rows } = await client.query<{ revoked_at: string | null }>('SELECT revoked_at FROM api_keys WHERE id = $1 FOR UPDATE', [id])
      const existing = rows[0]
      if (existing === undefined) return 'unknown'
      if (existing.revoked_at !== null) return 'already_revoked'
      const now = Date.now()
      await client.query('UPDATE api_keys SET revoked_at = $1 WHERE id = $2', [now, id])
      await recordInvalidation(client, id, now)
      return 'revoked'
    }),
    revocationMarker: async () => await revocationMarker(db),
    invalidationsSince: async (marker) => await invalidationsSince(db, marker),
    recordLastUsed: async (uses) => {
      if (uses.length === 0) return
      const values: unknown[] = []
      const tuples = uses.map(({ id, at }, index) => {
        values.push(id, at.getTime())
        return `($${index * 2 + 1}::text, $${index * 2 + 2}::bigint)`
      })
      await query(`UPDATE api_keys AS k SET last_used_at = v.at FROM (VALUES ${tuples.join(', ')}) AS v (id, at)
        WHERE k.id = v.id AND (k.last_used_at IS NULL OR k.last_used_at < v.at)`, values)
    }
  }
}

/** Locks the account's row until commit, so creations for one account take turns between count and insert; throws at the cap. */
async function lockAccountUnderCap (client: pg.PoolClient, accountId: number, maxLive: number, now: number): Promise<void> {
  await client.query('SELECT id FROM accounts WHERE id = $1 FOR UPDATE', [accountId])
  const { rows: [counted] } = await client.query<{ live: number }>(`SELECT count(*)::int AS live FROM api_keys WHERE account_id = $1 AND ${liveKeySql('$2')}`, [accountId, now])
  if ((counted?.live ?? 0) >= maxLive) throw new KeyLimitError(maxLive)
}

async function rollKey (client: pg.PoolClient, id: string, successor: RollArguments[1], { graceMs, maxLive }: RollArguments[2]): Promise<RollResult> {
  const { rows: [found] } = await client.query<ApiKeyDbRow>(`SELECT ${API_KEY_COLUMNS} FROM api_keys WHERE id = $1`, [id])
  if (found === undefined) return { outcome: 'unknown' }
  const now = Date.now()
  await lockAccountUnderCap(client, Number(found.account_id), maxLive, now)
  // Read again under the account's lock: a concurrent roll or revocation of this key has committed by now.
  const { rows: [row] } = await client.query<ApiKeyDbRow>(`SELECT ${API_KEY_COLUMNS} FROM api_keys WHERE id = $1 FOR UPDATE`, [id])
  const old = toApiKey(row as ApiKeyDbRow)
  if (!isLiveKey(old, now)) return { outcome: 'ended', old }
  const expiresAt = old.expiresAt === null ? null : now + (old.expiresAt.getTime() - old.createdAt.getTime())
  const { rows: [inserted] } = await client.query<ApiKeyDbRow>(INSERT_API_KEY,
    [successor.id, old.accountId, old.label, successor.prefix, successor.hash, now, scopesText(old.scopes), expiresAt])
  const endsAt = Math.min(now + graceMs, old.expiresAt?.getTime() ?? Infinity)
  const { rows: [ended] } = await client.query<ApiKeyDbRow>(`UPDATE api_keys SET expires_at = $1, rolled_to = $2 WHERE id = $3 RETURNING ${API_KEY_COLUMNS}`, [endsAt, successor.id, id])
  await recordInvalidation(client, id, now)
  return { outcome: 'rolled', old: toApiKey(ended as ApiKeyDbRow), key: toApiKey(inserted as ApiKeyDbRow) }
}

async function pageByAccount ({ query }: Connection, accountId: number, { live, limit, offset }: { live: boolean, limit: number, offset: number }): Promise<ApiKeyPage> {
  const condition = (now: string): string => (live ? liveKeySql(now) : `NOT ${liveKeySql(now)}`)
  const order = live ? 'created_at, id' : 'LEAST(revoked_at, expires_at) DESC, id'
  const now = Date.now()
  const rows = await query<ApiKeyDbRow & { total: number }>(
    `SELECT ${API_KEY_COLUMNS}, count(*) OVER ()::int AS total FROM api_keys WHERE account_id = $1 AND ${condition('$4')} ORDER BY ${order} LIMIT $2 OFFSET $3`,
    [accountId, limit, offset, now])
  // A page past the end has no row to carry the total.
  const total = rows[0]?.total ?? Number((await query<{ total: string }>(`SELECT count(*) AS total FROM api_keys WHERE account_id = $1 AND ${condition('$2')}`, [accountId, now]))[0]?.total ?? 0)
  return { rows: rows.map(toApiKey), total }
}
