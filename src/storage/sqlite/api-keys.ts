import type Database from 'better-sqlite3'
import { DEFAULT_SCOPES, scopesOfText, scopesText } from '../../core/api-keys.js'
import { isLiveKey, liveKeySql } from '../live-keys.js'
import { KeyLimitError, type ApiKeyRepository, type ApiKeyRow, type RevokeResult, type RollResult } from '../store.js'
import { keyInvalidationLog, type KeyInvalidationLog } from './key-invalidations.js'
import type { InsertMail } from './mail-outbox.js'
import { preparedOnFirstUse } from './statements.js'

interface ApiKeyDbRow {
  id: string
  account_id: number
  label: string | null
  prefix: string
  created_at: number
  last_used_at: number | null
  revoked_at: number | null
  scopes: string
  expires_at: number | null
  rolled_to: string | null
}

const API_KEY_COLUMNS = 'id, account_id, label, prefix, created_at, last_used_at, revoked_at, scopes, expires_at, rolled_to'
const LIVE = liveKeySql('@now')

const dateOrNull = (ms: number | null): Date | null => (ms === null ? null : new Date(ms))

const toApiKey = (row: ApiKeyDbRow): ApiKeyRow => {
  const key = {
    id: row.id,
    accountId: row.account_id,
    label: row.label,
    prefix: row.prefix,
    createdAt: new Date(row.created_at),
    lastUsedAt: dateOrNull(row.last_used_at),
    revokedAt: dateOrNull(row.revoked_at),
    scopes: scopesOfText(row.scopes),
    expiresAt: dateOrNull(row.expires_at),
    rolledTo: row.rolled_to
  }
  return { ...key, live: isLiveKey(key, Date.now()) }
}

const prepare = (db: Database.Database) => ({
  insertApiKey: db.prepare(`INSERT INTO api_keys (id, account_id, label, prefix, hash, created_at, scopes, expires_at)
    VALUES (@id, @accountId, @label, @prefix, @hash, @now, @scopes, @expiresAt) RETURNING ${API_KEY_COLUMNS}`),
  countLiveKeys: db.prepare(`SELECT count(*) FROM api_keys WHERE account_id = @accountId AND ${LIVE}`).pluck(),
  apiKeyByHash: db.prepare(`SELECT ${API_KEY_COLUMNS} FROM api_keys WHERE hash = ?`),
  apiKeyById: db.prepare(`SELECT ${API_KEY_COLUMNS} FROM api_keys WHERE id = ?`),
  apiKeysByAccount: db.prepare(`SELECT ${API_KEY_COLUMNS} FROM api_keys WHERE account_id = ? ORDER BY created_at, id`),
  liveKeysPage: db.prepare(`SELECT ${API_KEY_COLUMNS} FROM api_keys WHERE account_id = @accountId AND ${LIVE} ORDER BY created_at, id LIMIT @limit OFFSET @offset`),
  endedKeysPage: db.prepare(`SELECT ${API_KEY_COLUMNS} FROM api_keys WHERE account_id = @accountId AND NOT ${LIVE}
    ORDER BY min(coalesce(revoked_at, expires_at), coalesce(expires_at, revoked_at)) DESC, id LIMIT @limit OFFSET @offset`),
  countEndedKeys: db.prepare(`SELECT count(*) FROM api_keys WHERE account_id = @accountId AND NOT ${LIVE}`).pluck(),
  apiKeyRevokedAt: db.prepare('SELECT revoked_at FROM api_keys WHERE id = ?'),
  revokeApiKey: db.prepare('UPDATE api_keys SET revoked_at = ? WHERE id = ? AND revoked_at IS NULL'),
  endRolledKey: db.prepare('UPDATE api_keys SET expires_at = ?, rolled_to = ? WHERE id = ?'),
  expiringUnreminded: db.prepare(`SELECT ${API_KEY_COLUMNS} FROM api_keys
    WHERE revoked_at IS NULL AND rolled_to IS NULL AND expiry_reminded_at IS NULL AND expires_at > @now AND expires_at <= @until
      AND expires_at - created_at > @minLifetime ORDER BY expires_at, id LIMIT @limit`),
  markReminded: db.prepare('UPDATE api_keys SET expiry_reminded_at = ? WHERE id = ? AND expiry_reminded_at IS NULL'),
  recordLastUsed: db.prepare('UPDATE api_keys SET last_used_at = ? WHERE id = ? AND (last_used_at IS NULL OR last_used_at < ?)')
})

type Statements = ReturnType<typeof prepare>

export function apiKeyRepository (db: Database.Database, insertMail: InsertMail): ApiKeyRepository {
  const sql = preparedOnFirstUse(db, prepare)
  const invalidations = keyInvalidationLog(db)
  const findBy = (statement: Database.Statement, value: string): ApiKeyRow | undefined => {
    const row = statement.get(value) as ApiKeyDbRow | undefined
    return row && toApiKey(row)
  }
  return {
    // IMMEDIATE takes the write lock before counting: no other writer, in any process, can insert in between.
    create: async (key, { maxLive }, mail) => db.transaction((): ApiKeyRow => {
      const now = Date.now()
      if ((sql().countLiveKeys.get({ accountId: key.accountId, now }) as number) >= maxLive) throw new KeyLimitError(maxLive)
      const row = toApiKey(sql().insertApiKey.get({
        id: key.id, accountId: key.accountId, label: key.label, prefix: key.prefix, hash: key.hash, now, scopes: scopesText(key.scopes ?? DEFAULT_SCOPES), expiresAt: key.expiresAt?.getTime() ?? null
      }) as ApiKeyDbRow)
      if (mail !== undefined) insertMail(mail, now)
      return row
    }).immediate(),
    roll: async (id, successor, limits) => db.transaction(() => {
      const result = rollKey(sql(), invalidations, id, successor, limits)
      if (result.outcome === 'rolled' && limits.mail !== undefined) insertMail(limits.mail, Date.now())
      return result
    }).immediate(),
    expiringUnreminded: async (now, until, minLifetimeMs, limit) =>
      (sql().expiringUnreminded.all({ now: now.getTime(), until: until.getTime(), minLifetime: minLifetimeMs, limit }) as ApiKeyDbRow[]).map(toApiKey),
    remindExpiry: async (id, at, mail) => db.transaction(() => {
      if (sql().markReminded.run(at.getTime(), id).changes !== 1) return false
      insertMail(mail, at.getTime())
      return true
    }).immediate(),
    findByHash: async (hash) => findBy(sql().apiKeyByHash, hash),
    findById: async (id) => findBy(sql().apiKeyById, id),
    listByAccount: async (accountId) => (sql().apiKeysByAccount.all(accountId) as ApiKeyDbRow[]).map(toApiKey),
    pageByAccount: async (accountId, { live, limit, offset }) => db.transaction(() => {
      const now = Date.now()
      return {
        rows: ((live ? sql().liveKeysPage : sql().endedKeysPage).all({ accountId, now, limit, offset }) as ApiKeyDbRow[]).map(toApiKey),
        total: (live ? sql().countLiveKeys : sql().countEndedKeys).get({ accountId, now }) as number
      }
    })(),
    revoke: async (id) => db.transaction((): RevokeResult => {
      const existing = sql().apiKeyRevokedAt.get(id) as { revoked_at: number | null } | undefined
      if (!existing) return 'unknown'
      if (existing.revoked_at !== null) return 'already_revoked'
      const now = Date.now()
      sql().revokeApiKey.run(now, id)
      invalidations.record(id, now)
      return 'revoked'
    }).immediate(),
    revocationMarker: async () => invalidations.marker(),
    invalidationsSince: async (marker) => invalidations.since(marker),
    recordLastUsed: async (uses) => {
      db.transaction(() => {
        for (const { id, at } of uses) sql().recordLastUsed.run(at.getTime(), id, at.getTime())
      }).immediate()
    }
  }
}

/** Runs inside an IMMEDIATE transaction: the successor inherits the old key's scopes and lifetime. */
function rollKey (
  sql: Statements,
  invalidations: KeyInvalidationLog,
  id: string,
  successor: Parameters<ApiKeyRepository['roll']>[1],
  { graceMs, maxLive }: Parameters<ApiKeyRepository['roll']>[2]
): RollResult {
  const row = sql.apiKeyById.get(id) as ApiKeyDbRow | undefined
  if (row === undefined) return { outcome: 'unknown' }
  const old = toApiKey(row)
  const now = Date.now()
  if (!isLiveKey(old, now)) return { outcome: 'ended', old }
  if ((sql.countLiveKeys.get({ accountId: old.accountId, now }) as number) >= maxLive) throw new KeyLimitError(maxLive)
  const lifetime = row.expires_at === null ? undefined : row.expires_at - row.created_at
  const key = toApiKey(sql.insertApiKey.get({
    ...successor, accountId: old.accountId, label: old.label, now, scopes: row.scopes, expiresAt: lifetime === undefined ? null : now + lifetime
  }) as ApiKeyDbRow)
  const endsAt = Math.min(now + graceMs, row.expires_at ?? Infinity)
  sql.endRolledKey.run(endsAt, key.id, id)
  invalidations.record(id, now)
  return { outcome: 'rolled', old: toApiKey(sql.apiKeyById.get(id) as ApiKeyDbRow), key }
}
