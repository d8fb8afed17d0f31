import { mkdirSync } from 'node:fs'
import { dirname } from 'node:path'
import type Database from 'better-sqlite3'
import { decideClaim } from '../../core/idempotency.js'
import { exactInteger } from '../../core/int64.js'
import { PET_STATUSES, type NewPetRecord, type PetRecord, type PetStatus } from '../../core/pets.js'
import { DEFAULT_SCOPES, scopesOfText, scopesText } from '../../core/api-keys.js'
import { isLiveKey, liveKeySql } from '../live-keys.js'
import {
  firstFreePetId,
  DuplicateEmailError,
  KEY_INVALIDATIONS_KEPT_MS,
  KeyLimitError,
  type AccountRow,
  type ApiKeyRow,
  type AuditEvent,
  type AuditEventType,
  type RollResult,
  type UsageCount,
  type UsageOutcome,
  type IdempotencyClaim,
  type ListPetsQuery,
  type KeyInvalidations,
  type LockedAttempt,
  type LoginAttemptCount,
  type PetPage,
  type RevokeResult,
  type Store
} from '../store.js'
import { openDatabase, type SqliteSynchronous } from './database.js'
import { SQLITE_MIGRATIONS } from './migrations.js'
import { openPetWrites, type PetWrites } from './pet-writes.js'

/** Most creates that share one transaction (group commit); WRITE_BATCH_SIZE=1 turns group commit off. */
export const DEFAULT_WRITE_BATCH = 256

const PET_COLUMNS = 'id, name, category_id, status'

/** One page and one row more: whether more follow costs one row, not a second search of the index. */
const pageSql = (statusFilter: string): string => `SELECT ${PET_COLUMNS} FROM pets WHERE ${statusFilter} id > ? ORDER BY id LIMIT ?`

/** A row as better-sqlite3 returns it raw, its integers as bigints: a category id beyond 2^53 stays exact. */
type PetDbRow = [id: bigint, name: string, categoryId: bigint, status: PetStatus | null]

const toPet = ([id, name, categoryId, status]: PetDbRow): PetRecord =>
  ({ id: Number(id), name, categoryId: exactInteger(categoryId), ...(status !== null && { status }) })

interface AccountDbRow { id: number, email: string, name: string | null, created_at: number }
interface SessionDbRow { account_id: number, csrf_token: string, created_at: number, expires_at: number }
const ACCOUNT_COLUMNS = 'id, email, name, created_at'

// Every SET expression reads the row as it was, so both columns see the old window.
const RECORD_ATTEMPT = `INSERT INTO login_attempts (subject, attempts, window_started_at) VALUES (@subject, 1, @now)
  ON CONFLICT (subject) DO UPDATE SET
    attempts = CASE WHEN login_attempts.window_started_at < @windowStart THEN 1 ELSE login_attempts.attempts + 1 END,
    window_started_at = CASE WHEN login_attempts.window_started_at < @windowStart THEN @now ELSE login_attempts.window_started_at END
  RETURNING attempts, window_started_at`
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
/** Beyond this many invalidations since an instance last read them, it forgets every key rather than read them all. */
const MAX_INVALIDATIONS_READ = 10_000

const toAccount = (row: AccountDbRow): AccountRow =>
  ({ id: row.id, email: row.email, name: row.name, createdAt: new Date(row.created_at) })

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

interface AuditDbRow { id: number, at: number, event: AuditEventType, actor: AuditEvent['actor'], account_id: number | null, key_id: string | null, address: string | null, detail: string | null }
const AUDIT_COLUMNS = 'id, at, event, actor, account_id, key_id, address, detail'
const toAuditEvent = (row: AuditDbRow): AuditEvent => ({
  id: row.id, at: new Date(row.at), event: row.event, actor: row.actor, accountId: row.account_id, keyId: row.key_id, address: row.address, detail: row.detail
})

export function openSqliteStore (path: string, options: { writeBatchSize?: number, writeBatchWaitMs?: number, synchronous?: SqliteSynchronous } = {}): Store {
  const synchronous = options.synchronous ?? 'full'
  const db = openDatabase(path, synchronous === 'full' ? 'FULL' : 'OFF')
  const petWrites = openPetWrites(path, { synchronous, batchSize: options.writeBatchSize ?? DEFAULT_WRITE_BATCH, batchWaitMs: options.writeBatchWaitMs, mainDb: db })
  // Statements are prepared on first use: the tables exist only after migrate().
  let prepared: Statements | undefined
  return buildStore(db, () => (prepared ??= prepareStatements(db)), petWrites)
}

function applyMigrations (db: Database.Database): number[] {
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

type Statements = ReturnType<typeof prepareStatements>

/**
 * A statement for each status, the status written into its SQL: SQLite uses a partial index
 * (one per status, migration 4) only for a query whose WHERE names the index's own value.
 */
function byStatus<T> (prepare: (status: PetStatus) => T): Record<PetStatus, T> {
  return Object.fromEntries(PET_STATUSES.map((status) => [status, prepare(status)])) as Record<PetStatus, T>
}

function prepareStatements (db: Database.Database) {
  return {
    insertPet: db.prepare('INSERT INTO pets (name, category_id, status, created_at) VALUES (?, ?, ?, ?)'),
    lastPetId: db.prepare('SELECT max(id) FROM pets').pluck().safeIntegers(),
    petById: db.prepare(`SELECT ${PET_COLUMNS} FROM pets WHERE id = ?`).raw().safeIntegers(),
    pageAll: db.prepare(pageSql('')).raw().safeIntegers(),
    pageByStatus: byStatus((status) => db.prepare(pageSql(`status = '${status}' AND`)).raw().safeIntegers()),
    existsAfterAll: db.prepare('SELECT EXISTS (SELECT 1 FROM pets WHERE id > ?)').pluck(),
    existsAfterByStatus: byStatus((status) => db.prepare(`SELECT EXISTS (SELECT 1 FROM pets WHERE status = '${status}' AND id > ?)`).pluck()),
    insertAccount: db.prepare(`INSERT INTO accounts (email, name, password_hash, created_at) VALUES (?, ?, ?, ?) RETURNING ${ACCOUNT_COLUMNS}`),
    accountByEmail: db.prepare(`SELECT ${ACCOUNT_COLUMNS} FROM accounts WHERE email = ?`),
    accountById: db.prepare(`SELECT ${ACCOUNT_COLUMNS} FROM accounts WHERE id = ?`),
    credentialsByEmail: db.prepare('SELECT id, password_hash FROM accounts WHERE email = ?'),
    setPasswordHash: db.prepare('UPDATE accounts SET password_hash = ? WHERE id = ?'),
    insertSession: db.prepare('INSERT INTO sessions (token_hash, account_id, csrf_token, created_at, expires_at) VALUES (?, ?, ?, ?, ?)'),
    sessionByHash: db.prepare('SELECT account_id, csrf_token, created_at, expires_at FROM sessions WHERE token_hash = ?'),
    extendSession: db.prepare('UPDATE sessions SET expires_at = ? WHERE token_hash = ?'),
    deleteSession: db.prepare('DELETE FROM sessions WHERE token_hash = ?'),
    deleteSessionsByAccount: db.prepare('DELETE FROM sessions WHERE account_id = ?'),
    deleteExpiredSessions: db.prepare('DELETE FROM sessions WHERE expires_at <= ?'),
    recordAttempt: db.prepare(RECORD_ATTEMPT),
    forgiveAttempt: db.prepare('UPDATE login_attempts SET attempts = attempts - 1 WHERE subject = ? AND attempts > 0'),
    clearAttempts: db.prepare('DELETE FROM login_attempts WHERE subject = ?'),
    deleteStaleAttempts: db.prepare('DELETE FROM login_attempts WHERE window_started_at < ?'),
    lockRow: db.prepare('SELECT attempts, window_started_at, locked_until FROM login_attempts WHERE subject = ?'),
    upsertLock: db.prepare(`INSERT INTO login_attempts (subject, attempts, window_started_at, locked_until) VALUES (@subject, @attempts, @now, @lockedUntil)
      ON CONFLICT (subject) DO UPDATE SET attempts = excluded.attempts, window_started_at = excluded.window_started_at, locked_until = excluded.locked_until`),
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
    bumpRevocations: db.prepare("UPDATE counters SET value = value + 1 WHERE name = 'key_revocations' RETURNING value").pluck(),
    insertInvalidation: db.prepare('INSERT INTO key_invalidations (seq, key_id, created_at) VALUES (?, ?, ?)'),
    purgeInvalidations: db.prepare('DELETE FROM key_invalidations WHERE created_at < ?'),
    invalidatedKeyIds: db.prepare('SELECT key_id FROM key_invalidations WHERE seq > ? AND seq <= ? ORDER BY seq').pluck(),
    revocationMarker: db.prepare("SELECT value FROM counters WHERE name = 'key_revocations'").pluck(),
    addUsage: db.prepare(`INSERT INTO key_usage (key_id, hour, operation, outcome, count) VALUES (?, ?, ?, ?, ?)
      ON CONFLICT (key_id, hour, operation, outcome) DO UPDATE SET count = count + excluded.count`),
    usageForKey: db.prepare('SELECT hour, operation, outcome, count FROM key_usage WHERE key_id = ? AND hour >= ? ORDER BY hour, operation, outcome'),
    deleteUsage: db.prepare('DELETE FROM key_usage WHERE hour < ?'),
    appendAudit: db.prepare(`INSERT INTO audit_events (at, event, actor, account_id, key_id, address, detail, once)
      VALUES (@at, @event, @actor, @accountId, @keyId, @address, @detail, @once) ON CONFLICT (once) DO NOTHING`),
    auditPage: db.prepare(`SELECT ${AUDIT_COLUMNS} FROM audit_events WHERE account_id = ? AND id < ? ORDER BY id DESC LIMIT ?`),
    recordLastUsed: db.prepare('UPDATE api_keys SET last_used_at = ? WHERE id = ? AND (last_used_at IS NULL OR last_used_at < ?)'),
    insertSetting: db.prepare('INSERT INTO settings (name, value) VALUES (?, ?) ON CONFLICT (name) DO NOTHING'),
    settingByName: db.prepare('SELECT value FROM settings WHERE name = ?').pluck(),
    insertClaim: db.prepare('INSERT INTO idempotency_keys (api_key_id, idempotency_key, fingerprint, created_at) VALUES (?, ?, ?, ?) ON CONFLICT DO NOTHING'),
    claimByKey: db.prepare('SELECT fingerprint, pet_id AS petId, created_at AS createdAt FROM idempotency_keys WHERE api_key_id = ? AND idempotency_key = ?'),
    renewClaim: db.prepare('UPDATE idempotency_keys SET fingerprint = ?, pet_id = NULL, created_at = ? WHERE api_key_id = ? AND idempotency_key = ?'),
    releaseClaim: db.prepare('DELETE FROM idempotency_keys WHERE api_key_id = ? AND idempotency_key = ? AND pet_id IS NULL'),
    purgeClaims: db.prepare('DELETE FROM idempotency_keys WHERE created_at < ?')
  }
}

function buildStore (db: Database.Database, sql: () => Statements, petWrites: PetWrites): Store {
  const insertMany = db.transaction((pets: readonly NewPetRecord[]) => {
    // SQLite gives each row the largest id plus one: refused before any would exceed MAX_PET_ID.
    firstFreePetId(sql().lastPetId.get() as bigint | null, pets.length)
    const now = Date.now()
    for (const pet of pets) sql().insertPet.run(pet.name, pet.categoryId, pet.status ?? null, now)
  })

  return {
    engine: 'sqlite',
    pets: {
      insert: petWrites.insert,
      insertMany: async (pets) => { insertMany.immediate(pets) },
      findById: async (id) => {
        const row = sql().petById.get(id) as PetDbRow | undefined
        return row && toPet(row)
      },
      listPage: async ({ status, afterId, limit }: ListPetsQuery): Promise<PetPage> => {
        const rows = (status === undefined ? sql().pageAll.all(afterId, limit + 1) : sql().pageByStatus[status].all(afterId, limit + 1)) as PetDbRow[]
        return { pets: rows.slice(0, limit).map(toPet), hasMore: rows.length > limit }
      },
      existsAfter: async (status: PetStatus | undefined, afterId: number) =>
        (status === undefined ? sql().existsAfterAll.get(afterId) : sql().existsAfterByStatus[status].get(afterId)) === 1
    },
    accounts: {
      create: async ({ email, name, passwordHash }) => {
        try {
          return toAccount(sql().insertAccount.get(email, name, passwordHash ?? null, Date.now()) as AccountDbRow)
        } catch (error) {
          if ((error as { code?: string }).code === 'SQLITE_CONSTRAINT_UNIQUE') throw new DuplicateEmailError(email)
          throw error
        }
      },
      findByEmail: async (email) => {
        const row = sql().accountByEmail.get(email) as AccountDbRow | undefined
        return row && toAccount(row)
      },
      findById: async (id) => {
        const row = sql().accountById.get(id) as AccountDbRow | undefined
        return row && toAccount(row)
      },
      findCredentials: async (email) => {
        const row = sql().credentialsByEmail.get(email) as { id: number, password_hash: string | null } | undefined
        return row && { accountId: row.id, passwordHash: row.password_hash }
      },
      setPasswordHash: async (accountId, passwordHash) => sql().setPasswordHash.run(passwordHash, accountId).changes === 1
    },
    sessions: {
      create: async ({ tokenHash, accountId, csrfToken, createdAt, expiresAt }) => {
        sql().insertSession.run(tokenHash, accountId, csrfToken, createdAt.getTime(), expiresAt.getTime())
      },
      findByTokenHash: async (tokenHash) => {
        const row = sql().sessionByHash.get(tokenHash) as SessionDbRow | undefined
        return row && { accountId: row.account_id, csrfToken: row.csrf_token, createdAt: new Date(row.created_at), expiresAt: new Date(row.expires_at) }
      },
      extend: async (tokenHash, expiresAt) => { sql().extendSession.run(expiresAt.getTime(), tokenHash) },
      delete: async (tokenHash) => { sql().deleteSession.run(tokenHash) },
      deleteByAccount: async (accountId) => sql().deleteSessionsByAccount.run(accountId).changes,
      deleteExpired: async (now) => sql().deleteExpiredSessions.run(now.getTime()).changes
    },
    loginAttempts: {
      record: async (subjects, now, windowStart) => db.transaction((): LoginAttemptCount[] => subjects.map((subject) => {
        const row = sql().recordAttempt.get({ subject, now: now.getTime(), windowStart: windowStart.getTime() }) as { attempts: number, window_started_at: number }
        return { attempts: row.attempts, windowStartedAt: new Date(row.window_started_at) }
      })).immediate(),
      recordUnlessLocked: async (subject, now, { forgetBefore, lockMsAfter }) => db.transaction((): LockedAttempt => {
        const row = sql().lockRow.get(subject) as { attempts: number, window_started_at: number, locked_until: number } | undefined
        if (row !== undefined && row.locked_until > now.getTime()) return { allowed: false, lockedUntil: new Date(row.locked_until) }
        const attempts = row !== undefined && row.window_started_at >= forgetBefore.getTime() ? row.attempts + 1 : 1
        const lockMs = lockMsAfter(attempts)
        sql().upsertLock.run({ subject, attempts, now: now.getTime(), lockedUntil: lockMs > 0 ? now.getTime() + lockMs : 0 })
        return { allowed: true, attempts }
      }).immediate(),
      forgive: async (subject) => { sql().forgiveAttempt.run(subject) },
      clear: async (subject) => { sql().clearAttempts.run(subject) },
      deleteStaleBefore: async (windowStart) => sql().deleteStaleAttempts.run(windowStart.getTime()).changes
    },
    apiKeys: {
      // IMMEDIATE takes the write lock before counting: no other writer, in any process, can insert in between.
      create: async (key, { maxLive }) => db.transaction((): ApiKeyRow => {
        const now = Date.now()
        if ((sql().countLiveKeys.get({ accountId: key.accountId, now }) as number) >= maxLive) throw new KeyLimitError(maxLive)
        return toApiKey(sql().insertApiKey.get({
          id: key.id, accountId: key.accountId, label: key.label, prefix: key.prefix, hash: key.hash, now, scopes: scopesText(key.scopes ?? DEFAULT_SCOPES), expiresAt: key.expiresAt?.getTime() ?? null
        }) as ApiKeyDbRow)
      }).immediate(),
      roll: async (id, successor, { graceMs, maxLive }) => db.transaction((): RollResult => {
        const row = sql().apiKeyById.get(id) as ApiKeyDbRow | undefined
        if (row === undefined) return { outcome: 'unknown' }
        const old = toApiKey(row)
        const now = Date.now()
        if (!isLiveKey(old, now)) return { outcome: 'ended', old }
        if ((sql().countLiveKeys.get({ accountId: old.accountId, now }) as number) >= maxLive) throw new KeyLimitError(maxLive)
        const lifetime = row.expires_at === null ? undefined : row.expires_at - row.created_at
        const key = toApiKey(sql().insertApiKey.get({
          ...successor, accountId: old.accountId, label: old.label, now, scopes: row.scopes, expiresAt: lifetime === undefined ? null : now + lifetime
        }) as ApiKeyDbRow)
        const endsAt = Math.min(now + graceMs, row.expires_at ?? Infinity)
        sql().endRolledKey.run(endsAt, key.id, id)
        sql().insertInvalidation.run(sql().bumpRevocations.get() as number, id, now)
        sql().purgeInvalidations.run(now - KEY_INVALIDATIONS_KEPT_MS)
        return { outcome: 'rolled', old: toApiKey(sql().apiKeyById.get(id) as ApiKeyDbRow), key }
      }).immediate(),
      findByHash: async (hash) => {
        const row = sql().apiKeyByHash.get(hash) as ApiKeyDbRow | undefined
        return row && toApiKey(row)
      },
      findById: async (id) => {
        const row = sql().apiKeyById.get(id) as ApiKeyDbRow | undefined
        return row && toApiKey(row)
      },
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
        sql().insertInvalidation.run(sql().bumpRevocations.get() as number, id, now)
        sql().purgeInvalidations.run(now - KEY_INVALIDATIONS_KEPT_MS)
        return 'revoked'
      }).immediate(),
      revocationMarker: async () => sql().revocationMarker.get() as number,
      invalidationsSince: async (marker): Promise<KeyInvalidations> => {
        const current = sql().revocationMarker.get() as number
        if (current === marker) return { marker, keyIds: [] }
        if (current < marker || current - marker > MAX_INVALIDATIONS_READ) return { marker: current, keyIds: undefined }
        const keyIds = sql().invalidatedKeyIds.all(marker, current) as string[]
        return { marker: current, keyIds: keyIds.length === current - marker ? keyIds : undefined }
      },
      recordLastUsed: async (uses) => {
        db.transaction(() => {
          for (const { id, at } of uses) sql().recordLastUsed.run(at.getTime(), id, at.getTime())
        }).immediate()
      }
    },
    keyUsage: {
      add: async (counts) => {
        db.transaction(() => {
          for (const { keyId, hour, operation, outcome, count } of counts) sql().addUsage.run(keyId, hour.getTime(), operation, outcome, count)
        }).immediate()
      },
      forKey: async (keyId, since) => (sql().usageForKey.all(keyId, since.getTime()) as Array<{ hour: number, operation: string, outcome: UsageOutcome, count: number }>)
        .map((row): UsageCount => ({ keyId, hour: new Date(row.hour), operation: row.operation, outcome: row.outcome, count: row.count })),
      deleteBefore: async (date) => sql().deleteUsage.run(date.getTime()).changes
    },
    audit: {
      append: async ({ at, event, actor, accountId, keyId, address, detail, once }) =>
        sql().appendAudit.run({ at: at.getTime(), event, actor, accountId, keyId, address, detail, once: once ?? null }).changes === 1,
      page: async (accountId, { limit, beforeId }) =>
        (sql().auditPage.all(accountId, beforeId ?? Number.MAX_SAFE_INTEGER, limit) as AuditDbRow[]).map(toAuditEvent)
    },
    idempotency: {
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
    },
    setting: async (name, createValue) => {
      sql().insertSetting.run(name, createValue())
      return sql().settingByName.get(name) as string
    },
    migrate: async () => applyMigrations(db),
    groupCommitStats: petWrites.stats,
    backupTo: async (path) => {
      mkdirSync(dirname(path), { recursive: true })
      // SQLite's online backup: a consistent snapshot, taken while servers keep writing.
      await db.backup(path)
    },
    ping: async () => { db.prepare('SELECT 1').get() },
    close: async () => {
      await petWrites.close()
      db.close()
    }
  }
}
