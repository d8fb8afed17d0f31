import type pg from 'pg'
import { decideClaim } from '../../core/idempotency.js'
import { exactInteger } from '../../core/int64.js'
import { MAX_PET_ID, type NewPetRecord, type PetRecord, type PetStatus } from '../../core/pets.js'
import { BatchedLookup } from '../batched-lookup.js'
import { GroupCommit } from '../group-commit.js'
import { DEFAULT_SCOPES, scopesOfText, scopesText } from '../../core/api-keys.js'
import { isLiveKey, liveKeySql } from '../live-keys.js'
import {
  PetIdsExhaustedError,
  DuplicateEmailError,
  KEY_INVALIDATIONS_KEPT_MS,
  KeyLimitError,
  StoreUnavailableError,
  type AccountRow,
  type ApiKeyRow,
  type AuditEvent,
  type AuditEventType,
  type RollResult,
  type UsageOutcome,
  type IdempotencyClaim,
  type IdempotencyKeyRef,
  type KeyInvalidations,
  type LockedAttempt,
  type LoginAttemptCount,
  type RevokeResult,
  type Store
} from '../store.js'
import { ReplicaReads } from '../replica-reads.js'
import { PostgresHosts, type PoolLike, type Replica } from './hosts.js'
import { POSTGRES_MIGRATIONS } from './migrations.js'

const DEFAULT_WRITE_BATCH = 256
/** Rows per statement when seeding: each statement then carries a few hundred kilobytes. */
const BULK_ROWS_PER_STATEMENT = 5000
/** Animals read by one query when many are asked for at once (random reads of a large catalogue). */
const MAX_IDS_PER_LOOKUP = 500
const CONNECT_TIMEOUT_MS = 3000
const STATEMENT_TIMEOUT_MS = 5000

const PET_COLUMNS = 'id, name, category_id, status'

/** One page and one row more: whether more follow costs one row, not a second search of the index. */
const pageSql = (statusFilter: string): string => `SELECT ${PET_COLUMNS} FROM pets WHERE ${statusFilter} id > $1 ORDER BY id LIMIT $2`

const PAGE_ALL = pageSql('')
const PAGE_BY_STATUS = pageSql('status = $3 AND')

/** A row as pg returns it: BIGINT columns as their digits, so a category id beyond 2^53 stays exact. */
interface PetDbRow { id: string, name: string, category_id: string, status: PetStatus | null }

const toPet = (row: PetDbRow): PetRecord =>
  ({ id: Number(row.id), name: row.name, categoryId: exactInteger(row.category_id), ...(row.status !== null && { status: row.status }) })

interface AccountDbRow { id: string, email: string, name: string | null, created_at: string }
interface SessionDbRow { account_id: string, csrf_token: string, created_at: string, expires_at: string }
const ACCOUNT_COLUMNS = 'id, email, name, created_at'

// Every SET expression reads the row as it was, so both columns see the old window.
const RECORD_ATTEMPT = `INSERT INTO login_attempts (subject, attempts, window_started_at) VALUES ($1, 1, $2)
  ON CONFLICT (subject) DO UPDATE SET
    attempts = CASE WHEN login_attempts.window_started_at < $3 THEN 1 ELSE login_attempts.attempts + 1 END,
    window_started_at = CASE WHEN login_attempts.window_started_at < $3 THEN $2 ELSE login_attempts.window_started_at END
  RETURNING attempts, window_started_at`
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
/** Beyond this many invalidations since an instance last read them, it forgets every key rather than read them all. */
const MAX_INVALIDATIONS_READ = 10_000

const toDate = (ms: string | null): Date | null => (ms === null ? null : new Date(Number(ms)))

const toAccount = (row: AccountDbRow): AccountRow =>
  ({ id: Number(row.id), email: row.email, name: row.name, createdAt: new Date(Number(row.created_at)) })

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

interface AuditDbRow { id: string, at: string, event: AuditEventType, actor: AuditEvent['actor'], account_id: string | null, key_id: string | null, address: string | null, detail: string | null }
const AUDIT_COLUMNS = 'id, at, event, actor, account_id, key_id, address, detail'
const toAuditEvent = (row: AuditDbRow): AuditEvent => ({
  id: Number(row.id),
  at: new Date(Number(row.at)),
  event: row.event,
  actor: row.actor,
  accountId: row.account_id === null ? null : Number(row.account_id),
  keyId: row.key_id,
  address: row.address,
  detail: row.detail
})

/** Locks the account's row until commit, so creations for one account take turns between count and insert; throws at the cap. */
async function lockAccountUnderCap (client: pg.PoolClient, accountId: number, maxLive: number, now: number): Promise<void> {
  await client.query('SELECT id FROM accounts WHERE id = $1 FOR UPDATE', [accountId])
  const { rows: [counted] } = await client.query<{ live: number }>(`SELECT count(*)::int AS live FROM api_keys WHERE account_id = $1 AND ${liveKeySql('$2')}`, [accountId, now])
  if ((counted?.live ?? 0) >= maxLive) throw new KeyLimitError(maxLive)
}

/** Numbers the key's invalidation; the counter row stays locked until commit, so numbers become visible in their order. */
async function recordInvalidation (client: pg.PoolClient, keyId: string, now: number): Promise<void> {
  await client.query(`WITH next AS (UPDATE counters SET value = value + 1 WHERE name = 'key_revocations' RETURNING value)
    INSERT INTO key_invalidations (seq, key_id, created_at) SELECT value, $1, $2 FROM next`, [keyId, now])
  await client.query('DELETE FROM key_invalidations WHERE created_at < $1', [now - KEY_INVALIDATIONS_KEPT_MS])
}

/** Connection failures, timeouts and a host that turned read-only (a demoted primary) mean "try again later", not "bug". */
function isUnavailable (error: unknown): boolean {
  const { code, message } = error as { code?: string, message?: string }
  if (typeof code === 'string' && (/^(08|57P0|53|25006)/.test(code) || ['ECONNREFUSED', 'ECONNRESET', 'ETIMEDOUT', 'ENOTFOUND', 'EPIPE', 'EHOSTUNREACH'].includes(code))) return true
  return typeof message === 'string' && /timeout|Connection terminated|connection .*closed|Client has encountered a connection error/i.test(message)
}

interface PetWrite {
  pet: NewPetRecord
  claim: IdempotencyKeyRef | undefined
}

export interface PostgresStoreOptions {
  poolSize: number
  /** Most creates that share one transaction (group commit); 1 turns group commit off. */
  writeBatchSize?: number
  /** Longest a create waits for others to join its batch while the event loop is busy; 0 (the default) commits at the next turn. */
  writeBatchWaitMs?: number
  /** Background failures, such as an idle connection dropped by the server. */
  onError: (error: unknown) => void
  /** Settings that put acknowledged writes at risk, and changes of primary. */
  onWarning?: (message: string) => void
  /** Hot standbys that may answer catalogue reads and key lookups. */
  replicaUrls?: readonly string[]
  /** A replica that lags the primary by more than this is not read from (default 5000). */
  replicaMaxLagMs?: number
}

/**
 * One URL, or one per host: the store writes to the host that is not in recovery and follows a
 * failover by itself (hosts.ts); with `replicaUrls`, catalogue reads and key lookups may be answered
 * by a hot standby when the answer is provably the primary's (replica-reads.ts).
 */
export function openPostgresStore (urls: string | readonly string[], options: PostgresStoreOptions): Store {
  const hosts = new PostgresHosts(typeof urls === 'string' ? [urls] : urls, {
    poolSize: options.poolSize,
    connectTimeoutMs: CONNECT_TIMEOUT_MS,
    statementTimeoutMs: STATEMENT_TIMEOUT_MS,
    replicaUrls: options.replicaUrls,
    replicaMaxLagMs: options.replicaMaxLagMs,
    onError: options.onError,
    onWarning: options.onWarning ?? (() => {})
  })
  const primary = storeOn(hosts.primary, options)
  // The same statements on each replica's pool; only their reads are used (ReplicaReads).
  const onReplicas = new Map(hosts.replicas.map((replica) => [replica, storeOn(replica.host.pool, options)]))
  const reads = new ReplicaReads(hosts, (replica: Replica) => onReplicas.get(replica) as Store)
  return {
    ...primary,
    pets: onReplicas.size === 0 ? primary.pets : reads.pets(primary.pets),
    apiKeys: onReplicas.size === 0 ? primary.apiKeys : reads.apiKeys(primary.apiKeys),
    migrate: async () => {
      const applied = await primary.migrate()
      if (hosts.hostCount > 1 || onReplicas.size > 0) await warnAboutReplication(hosts.primary, options.onWarning ?? (() => {}))
      return applied
    },
    replicationStats: () => ({ ...hosts.status(), replicaReads: { ...reads.counts } }),
    onPrimaryChange: (listener) => { hosts.onPrimaryChange(listener) },
    // Ends every host's pool, the replicas' included, once the pending creates are committed.
    close: primary.close
  }
}

/** The repositories on one pool: the primary's (which follows failovers), or a replica's. */
function storeOn (pool: PoolLike, options: PostgresStoreOptions): Store {
  // An idle connection dropped by the server must not take the process down.
  pool.on('error', options.onError)

  /** A statement on a pooled connection; `name` prepares it once on each connection. */
  const onPool = async <Row extends pg.QueryResultRow>(config: pg.QueryConfig): Promise<pg.QueryResult<Row>> => {
    try {
      return await pool.query<Row>(config)
    } catch (error) {
      throw isUnavailable(error) ? new StoreUnavailableError(error) : error
    }
  }

  async function query<Row extends pg.QueryResultRow> (text: string, values: unknown[] = [], name?: string): Promise<Row[]> {
    return (await onPool<Row>({ text, values, name })).rows
  }

  async function transaction<T> (work: (client: pg.PoolClient) => Promise<T>): Promise<T> {
    let client: pg.PoolClient
    try {
      client = await pool.connect()
    } catch (error) {
      throw isUnavailable(error) ? new StoreUnavailableError(error) : error
    }
    let broken = false
    try {
      await client.query('BEGIN')
      const result = await work(client)
      await client.query('COMMIT')
      return result
    } catch (error) {
      await client.query('ROLLBACK').catch(() => { broken = true })
      throw isUnavailable(error) ? new StoreUnavailableError(error) : error
    } finally {
      client.release(broken)
    }
  }

  const onClient = (client: pg.PoolClient): Statement => async (config) => await client.query(config)

  /** A batch without idempotency keys is one statement; claimed keys are completed in the same transaction. */
  const insertBatch = async (batch: PetWrite[]): Promise<Array<{ id: number }>> => {
    const pets = batch.map((write) => write.pet)
    const firstId = batch.every((write) => write.claim === undefined)
      ? await insertPets(onPool, pets)
      : await transaction(async (client) => {
        const firstId = await insertPets(onClient(client), pets)
        for (const [index, { claim }] of batch.entries()) {
          if (claim) {
            await client.query('UPDATE idempotency_keys SET pet_id = $1 WHERE api_key_id = $2 AND idempotency_key = $3', [firstId + index, claim.apiKeyId, claim.key])
          }
        }
        return firstId
      })
    return batch.map((_, index) => ({ id: firstId + index }))
  }
  const writes = new GroupCommit<PetWrite, { id: number }>(insertBatch, options.writeBatchSize ?? DEFAULT_WRITE_BATCH, options.writeBatchWaitMs)
  const petsById = new BatchedLookup<number, PetRecord>(async (ids) => {
    const rows = await query<PetDbRow>(`SELECT ${PET_COLUMNS} FROM pets WHERE id = ANY ($1::bigint[])`, [ids], 'pets-by-id')
    return new Map(rows.map((row) => [Number(row.id), toPet(row)]))
  }, MAX_IDS_PER_LOOKUP)
  let closing: Promise<void> | undefined

  return {
    engine: 'postgres',
    pets: {
      insert: async (pet, claim) => writes.submit({ pet, claim }),
      insertMany: async (pets) => {
        await transaction(async (client) => {
          for (let start = 0; start < pets.length; start += BULK_ROWS_PER_STATEMENT) {
            await insertPets(onClient(client), pets.slice(start, start + BULK_ROWS_PER_STATEMENT))
          }
        })
      },
      findById: async (id) => await petsById.get(id),
      listPage: async ({ status, afterId, limit }) => {
        const rows = status === undefined
          ? await query<PetDbRow>(PAGE_ALL, [afterId, limit + 1], 'page-all')
          : await query<PetDbRow>(PAGE_BY_STATUS, [afterId, limit + 1, status], 'page-by-status')
        return { pets: rows.slice(0, limit).map(toPet), hasMore: rows.length > limit }
      },
      existsAfter: async (status, afterId) => {
        const [row] = status === undefined
          ? await query<{ found: boolean }>('SELECT EXISTS (SELECT 1 FROM pets WHERE id > $1) AS found', [afterId])
          : await query<{ found: boolean }>('SELECT EXISTS (SELECT 1 FROM pets WHERE status = $2 AND id > $1) AS found', [afterId, status])
        return row?.found === true
      }
    },
    accounts: {
      create: async ({ email, name, passwordHash }) => {
        try {
          const [row] = await query<AccountDbRow>(`INSERT INTO accounts (email, name, password_hash, created_at) VALUES ($1, $2, $3, $4) RETURNING ${ACCOUNT_COLUMNS}`,
            [email, name, passwordHash ?? null, Date.now()])
          return toAccount(row as AccountDbRow)
        } catch (error) {
          if ((error as { code?: string }).code === '23505') throw new DuplicateEmailError(email)
          throw error
        }
      },
      findByEmail: async (email) => {
        const [row] = await query<AccountDbRow>(`SELECT ${ACCOUNT_COLUMNS} FROM accounts WHERE email = $1`, [email])
        return row && toAccount(row)
      },
      findById: async (id) => {
        const [row] = await query<AccountDbRow>(`SELECT ${ACCOUNT_COLUMNS} FROM accounts WHERE id = $1`, [id])
        return row && toAccount(row)
      },
      findCredentials: async (email) => {
        const [row] = await query<{ id: string, password_hash: string | null }>('SELECT id, password_hash FROM accounts WHERE email = $1', [email])
        return row && { accountId: Number(row.id), passwordHash: row.password_hash }
      },
      setPasswordHash: async (accountId, passwordHash) =>
        (await query<{ id: string }>('UPDATE accounts SET password_hash = $1 WHERE id = $2 RETURNING id', [passwordHash, accountId])).length === 1
    },
    sessions: {
      create: async ({ tokenHash, accountId, csrfToken, createdAt, expiresAt }) => {
        await query('INSERT INTO sessions (token_hash, account_id, csrf_token, created_at, expires_at) VALUES ($1, $2, $3, $4, $5)',
          [tokenHash, accountId, csrfToken, createdAt.getTime(), expiresAt.getTime()])
      },
      findByTokenHash: async (tokenHash) => {
        const [row] = await query<SessionDbRow>('SELECT account_id, csrf_token, created_at, expires_at FROM sessions WHERE token_hash = $1', [tokenHash])
        return row && { accountId: Number(row.account_id), csrfToken: row.csrf_token, createdAt: new Date(Number(row.created_at)), expiresAt: new Date(Number(row.expires_at)) }
      },
      extend: async (tokenHash, expiresAt) => { await query('UPDATE sessions SET expires_at = $1 WHERE token_hash = $2', [expiresAt.getTime(), tokenHash]) },
      delete: async (tokenHash) => { await query('DELETE FROM sessions WHERE token_hash = $1', [tokenHash]) },
      deleteByAccount: async (accountId) =>
        (await query<{ token_hash: string }>('DELETE FROM sessions WHERE account_id = $1 RETURNING token_hash', [accountId])).length,
      deleteExpired: async (now) =>
        (await query<{ token_hash: string }>('DELETE FROM sessions WHERE expires_at <= $1 RETURNING token_hash', [now.getTime()])).length
    },
    loginAttempts: {
      record: async (subjects, now, windowStart) => transaction(async (client): Promise<LoginAttemptCount[]> => {
        const counts: LoginAttemptCount[] = []
        for (const subject of subjects) {
          const { rows } = await client.query<{ attempts: number, window_started_at: string }>(RECORD_ATTEMPT, [subject, now.getTime(), windowStart.getTime()])
          const row = rows[0]
          if (row === undefined) throw new Error('recording a log-in attempt returned no row')
          counts.push({ attempts: Number(row.attempts), windowStartedAt: new Date(Number(row.window_started_at)) })
        }
        return counts
      }),
      recordUnlessLocked: async (subject, now, { forgetBefore, lockMsAfter }) => transaction(async (client): Promise<LockedAttempt> => {
        // The row exists before it is locked, so two first attempts take turns on it like any others.
        await client.query('INSERT INTO login_attempts (subject, attempts, window_started_at, locked_until) VALUES ($1, 0, 0, 0) ON CONFLICT (subject) DO NOTHING', [subject])
        const { rows } = await client.query<{ attempts: number, window_started_at: string, locked_until: string }>(
          'SELECT attempts, window_started_at, locked_until FROM login_attempts WHERE subject = $1 FOR UPDATE', [subject])
        const row = rows[0]
        if (row === undefined) throw new Error('the attempt row vanished inside its transaction')
        if (Number(row.locked_until) > now.getTime()) return { allowed: false, lockedUntil: new Date(Number(row.locked_until)) }
        const attempts = Number(row.window_started_at) >= forgetBefore.getTime() ? Number(row.attempts) + 1 : 1
        const lockMs = lockMsAfter(attempts)
        await client.query('UPDATE login_attempts SET attempts = $2, window_started_at = $3, locked_until = $4 WHERE subject = $1',
          [subject, attempts, now.getTime(), lockMs > 0 ? now.getTime() + lockMs : 0])
        return { allowed: true, attempts }
      }),
      forgive: async (subject) => { await query('UPDATE login_attempts SET attempts = attempts - 1 WHERE subject = $1 AND attempts > 0', [subject]) },
      clear: async (subject) => { await query('DELETE FROM login_attempts WHERE subject = $1', [subject]) },
      deleteStaleBefore: async (windowStart) =>
        (await query<{ subject: string }>('DELETE FROM login_attempts WHERE window_started_at < $1 RETURNING subject', [windowStart.getTime()])).length
    },
    apiKeys: {
      // The account's row stays locked until commit: creations for one account take turns between count and insert.
      create: async (key, { maxLive }) => transaction(async (client): Promise<ApiKeyRow> => {
        const now = Date.now()
        await lockAccountUnderCap(client, key.accountId, maxLive, now)
        const { rows: [row] } = await client.query<ApiKeyDbRow>(
          `INSERT INTO api_keys (id, account_id, label, prefix, hash, created_at, scopes, expires_at) VALUES ($1, $2, $3, $4, $5, $6, $7, $8) RETURNING ${API_KEY_COLUMNS}`,
          [key.id, key.accountId, key.label, key.prefix, key.hash, now, scopesText(key.scopes ?? DEFAULT_SCOPES), key.expiresAt?.getTime() ?? null])
        return toApiKey(row as ApiKeyDbRow)
      }),
      roll: async (id, successor, { graceMs, maxLive }) => transaction(async (client): Promise<RollResult> => {
        const { rows: [found] } = await client.query<ApiKeyDbRow>(`SELECT ${API_KEY_COLUMNS} FROM api_keys WHERE id = $1`, [id])
        if (found === undefined) return { outcome: 'unknown' }
        const now = Date.now()
        await lockAccountUnderCap(client, Number(found.account_id), maxLive, now)
        // Read again under the account's lock: a concurrent roll or revocation of this key has committed by now.
        const { rows: [row] } = await client.query<ApiKeyDbRow>(`SELECT ${API_KEY_COLUMNS} FROM api_keys WHERE id = $1 FOR UPDATE`, [id])
        const old = toApiKey(row as ApiKeyDbRow)
        if (!isLiveKey(old, now)) return { outcome: 'ended', old }
        const expiresAt = old.expiresAt === null ? null : now + (old.expiresAt.getTime() - old.createdAt.getTime())
        const { rows: [inserted] } = await client.query<ApiKeyDbRow>(
          `INSERT INTO api_keys (id, account_id, label, prefix, hash, created_at, scopes, expires_at) VALUES ($1, $2, $3, $4, $5, $6, $7, $8) RETURNING ${API_KEY_COLUMNS}`,
          [successor.id, old.accountId, old.label, successor.prefix, successor.hash, now, scopesText(old.scopes), expiresAt])
        const endsAt = Math.min(now + graceMs, old.expiresAt?.getTime() ?? Infinity)
        const { rows: [ended] } = await client.query<ApiKeyDbRow>(`UPDATE api_keys SET expires_at = $1, rolled_to = $2 WHERE id = $3 RETURNING ${API_KEY_COLUMNS}`, [endsAt, successor.id, id])
        await recordInvalidation(client, id, now)
        return { outcome: 'rolled', old: toApiKey(ended as ApiKeyDbRow), key: toApiKey(inserted as ApiKeyDbRow) }
      }),
      findByHash: async (hash) => {
        const [row] = await query<ApiKeyDbRow>(`SELECT ${API_KEY_COLUMNS} FROM api_keys WHERE hash = $1`, [hash], 'api-key-by-hash')
        return row && toApiKey(row)
      },
      findById: async (id) => {
        const [row] = await query<ApiKeyDbRow>(`SELECT ${API_KEY_COLUMNS} FROM api_keys WHERE id = $1`, [id])
        return row && toApiKey(row)
      },
      listByAccount: async (accountId) =>
        (await query<ApiKeyDbRow>(`SELECT ${API_KEY_COLUMNS} FROM api_keys WHERE account_id = $1 ORDER BY created_at, id`, [accountId])).map(toApiKey),
      pageByAccount: async (accountId, { live, limit, offset }) => {
        const condition = (now: string): string => (live ? liveKeySql(now) : `NOT ${liveKeySql(now)}`)
        const order = live ? 'created_at, id' : 'LEAST(revoked_at, expires_at) DESC, id'
        const now = Date.now()
        const rows = await query<ApiKeyDbRow & { total: number }>(
          `SELECT ${API_KEY_COLUMNS}, count(*) OVER ()::int AS total FROM api_keys WHERE account_id = $1 AND ${condition('$4')} ORDER BY ${order} LIMIT $2 OFFSET $3`,
          [accountId, limit, offset, now])
        // A page past the end has no row to carry the total.
        const total = rows[0]?.total ?? Number((await query<{ total: string }>(`SELECT count(*) AS total FROM api_keys WHERE account_id = $1 AND ${condition('$2')}`, [accountId, now]))[0]?.total ?? 0)
        return { rows: rows.map(toApiKey), total }
      },
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
      revocationMarker: async () =>
        Number((await query<{ value: string }>("SELECT value FROM counters WHERE name = 'key_revocations'"))[0]?.value),
      invalidationsSince: async (marker): Promise<KeyInvalidations> => {
        const current = Number((await query<{ value: string }>("SELECT value FROM counters WHERE name = 'key_revocations'", [], 'revocation-marker'))[0]?.value)
        if (current === marker) return { marker, keyIds: [] }
        if (current < marker || current - marker > MAX_INVALIDATIONS_READ) return { marker: current, keyIds: undefined }
        const rows = await query<{ key_id: string }>('SELECT key_id FROM key_invalidations WHERE seq > $1 AND seq <= $2 ORDER BY seq', [marker, current])
        return { marker: current, keyIds: rows.length === current - marker ? rows.map((row) => row.key_id) : undefined }
      },
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
    },
    keyUsage: {
      add: async (counts) => {
        if (counts.length === 0) return
        const values: unknown[] = []
        const tuples = counts.map(({ keyId, hour, operation, outcome, count }, index) => {
          values.push(keyId, hour.getTime(), operation, outcome, count)
          const at = index * 5
          return `($${at + 1}::text, $${at + 2}::bigint, $${at + 3}::text, $${at + 4}::text, $${at + 5}::bigint)`
        })
        // One statement: the rows of every instance meet in the upsert, which adds under the row lock.
        await query(`INSERT INTO key_usage AS u (key_id, hour, operation, outcome, count) VALUES ${tuples.join(', ')}
          ON CONFLICT (key_id, hour, operation, outcome) DO UPDATE SET count = u.count + excluded.count`, values)
      },
      forKey: async (keyId, since) =>
        (await query<{ hour: string, operation: string, outcome: UsageOutcome, count: string }>(
          'SELECT hour, operation, outcome, count FROM key_usage WHERE key_id = $1 AND hour >= $2 ORDER BY hour, operation, outcome', [keyId, since.getTime()]))
          .map((row) => ({ keyId, hour: new Date(Number(row.hour)), operation: row.operation, outcome: row.outcome, count: Number(row.count) })),
      deleteBefore: async (date) => (await onPool({ text: 'DELETE FROM key_usage WHERE hour < $1', values: [date.getTime()] })).rowCount ?? 0
    },
    audit: {
      append: async ({ at, event, actor, accountId, keyId, address, detail, once }) =>
        ((await onPool({
          text: `INSERT INTO audit_events (at, event, actor, account_id, key_id, address, detail, once) VALUES ($1, $2, $3, $4, $5, $6, $7, $8)
            ON CONFLICT (once) DO NOTHING`,
          values: [at.getTime(), event, actor, accountId, keyId, address, detail, once ?? null]
        })).rowCount ?? 0) === 1,
      page: async (accountId, { limit, beforeId }) =>
        (await query<AuditDbRow>(`SELECT ${AUDIT_COLUMNS} FROM audit_events WHERE account_id = $1 AND id < $2 ORDER BY id DESC LIMIT $3`,
          [accountId, beforeId ?? Number.MAX_SAFE_INTEGER, limit])).map(toAuditEvent)
    },
    idempotency: {
      claim: async ({ apiKeyId, key }, fingerprint, { now, expiredBefore, abandonedBefore }) => transaction(async (client): Promise<IdempotencyClaim> => {
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
      }),
      release: async ({ apiKeyId, key }) => {
        await query('DELETE FROM idempotency_keys WHERE api_key_id = $1 AND idempotency_key = $2 AND pet_id IS NULL', [apiKeyId, key])
      },
      purgeCreatedBefore: async (date) => {
        const deleted = await query<{ api_key_id: string }>('DELETE FROM idempotency_keys WHERE created_at < $1 RETURNING api_key_id', [date.getTime()])
        return deleted.length
      }
    },
    setting: async (name, createValue) => {
      await query('INSERT INTO settings (name, value) VALUES ($1, $2) ON CONFLICT (name) DO NOTHING', [name, createValue()])
      return (await query<{ value: string }>('SELECT value FROM settings WHERE name = $1', [name]))[0]?.value ?? ''
    },
    migrate: async () => {
      const applied = await applyMigrations(transaction)
      await warnAboutDurability(query, options.onWarning ?? (() => {}))
      return applied
    },
    groupCommitStats: () => ({ commits: writes.batches, syncs: undefined }),
    poolStats: () => ({ total: pool.totalCount, idle: pool.idleCount, waiting: pool.waitingCount }),
    ping: async () => { await query('SELECT 1') },
    close: () => (closing ??= writes.drain().then(async () => pool.end()))
  }
}

/**
 * With several hosts, a failover keeps every acknowledged create only if each commit waited for a
 * standby: synchronous_standby_names names one, and synchronous_commit is on (or remote_apply).
 */
async function warnAboutReplication (pool: PoolLike, warn: (message: string) => void): Promise<void> {
  const { rows: [row] } = await pool.query<{ names: string, commit: string }>({
    text: "SELECT current_setting('synchronous_standby_names') AS names, current_setting('synchronous_commit') AS commit"
  })
  if (row === undefined) return
  if (row.names.trim() === '' || !['on', 'remote_apply'].includes(row.commit)) {
    warn(`PostgreSQL replicates asynchronously (synchronous_standby_names='${row.names}', synchronous_commit=${row.commit}): ` +
      'a failover can lose the creates acknowledged in the last moments before the primary failed. See docs/replication.md.')
  }
}

/** A server running with fsync or synchronous_commit off can lose commits it acknowledged. */
async function warnAboutDurability (query: <Row extends pg.QueryResultRow>(text: string) => Promise<Row[]>, warn: (message: string) => void): Promise<void> {
  for (const setting of ['fsync', 'synchronous_commit']) {
    const [row] = await query<Record<string, string>>(`SHOW ${setting}`)
    if (row?.[setting] === 'off') {
      warn(`PostgreSQL runs with ${setting}=off: animals acknowledged with 201 can be lost in a crash. Turn it on for production.`)
    }
  }
}

/**
 * Inserts animals with consecutive ids and returns the first, in one statement. Taking the ids
 * from one counter row serialises id assignment with commit order across every instance (the
 * row stays locked until the transaction ends), so a reader never sees id N+1 committed before
 * id N: keyset pages never skip an animal that commits late. The counter never passes
 * MAX_PET_ID: a batch that would take it beyond inserts nothing and returns no row. Sent alone, the statement is its
 * own transaction: a batch of creates costs one round trip. The columns come as four arrays,
 * so the text never changes and each connection prepares it once.
 */
const INSERT_PETS = `
  WITH taken AS (
    UPDATE counters SET value = value + cardinality($1::text[]) WHERE name = 'pet_ids' AND value + cardinality($1::text[]) <= $5
    RETURNING value - cardinality($1::text[]) AS last_id_before
  ), inserted AS (
    INSERT INTO pets (id, name, category_id, status, created_at)
    SELECT taken.last_id_before + pet.position, pet.name, pet.category_id, pet.status, $4
    FROM taken, unnest($1::text[], $2::bigint[], $3::text[]) WITH ORDINALITY AS pet (name, category_id, status, position)
    RETURNING 1
  )
  SELECT last_id_before + 1 AS first_id, (SELECT count(*) FROM inserted)::int AS inserted FROM taken`

type Statement = (config: { name: string, text: string, values: unknown[] }) => Promise<pg.QueryResult>

async function insertPets (run: Statement, pets: readonly NewPetRecord[]): Promise<number> {
  const { rows: [row] } = await run({
    name: 'insert-pets',
    text: INSERT_PETS,
    values: [pets.map((pet) => pet.name), pets.map((pet) => pet.categoryId.toString()), pets.map((pet) => pet.status ?? null), Date.now(), MAX_PET_ID]
  })
  // No row: the counter would pass MAX_PET_ID, so it was left as it was and nothing was inserted.
  if (row === undefined) throw new PetIdsExhaustedError()
  const { first_id: firstId, inserted } = row as { first_id?: string, inserted?: number }
  if (firstId === undefined || inserted !== pets.length) throw new Error(`inserting ${pets.length} animals inserted ${String(inserted)}`)
  return Number(firstId)
}

type Transaction = <T>(work: (client: pg.PoolClient) => Promise<T>) => Promise<T>

/**
 * Applies pending migrations in one transaction that first locks the row of a lock
 * table, so instances starting together take turns and none applies a version twice.
 */
async function applyMigrations (transaction: Transaction): Promise<number[]> {
  await createBookkeeping(transaction)
  return transaction(async (client) => {
    await client.query("SELECT name FROM schema_migrations_lock WHERE name = 'migrations' FOR UPDATE")
    const { rows } = await client.query<{ version: number }>('SELECT version FROM schema_migrations')
    const done = new Set(rows.map((row) => Number(row.version)))
    const applied: number[] = []
    for (const migration of POSTGRES_MIGRATIONS) {
      if (done.has(migration.version)) continue
      await client.query(migration.sql)
      await client.query('INSERT INTO schema_migrations (version, name, applied_at) VALUES ($1, $2, $3)', [migration.version, migration.name, Date.now()])
      applied.push(migration.version)
    }
    return applied
  })
}

async function createBookkeeping (transaction: Transaction): Promise<void> {
  for (let attempt = 0; ; attempt++) {
    try {
      await transaction(async (client) => {
        await client.query('CREATE TABLE IF NOT EXISTS schema_migrations (version INT PRIMARY KEY, name TEXT NOT NULL, applied_at BIGINT NOT NULL)')
        await client.query('CREATE TABLE IF NOT EXISTS schema_migrations_lock (name TEXT PRIMARY KEY)')
        await client.query("INSERT INTO schema_migrations_lock (name) VALUES ('migrations') ON CONFLICT (name) DO NOTHING")
      })
      return
    } catch (error) {
      // Two instances creating the same table at the same moment: one loses with a
      // unique violation on the catalogue; the table exists now, so try again.
      const code = (error as { code?: string }).code
      if (attempt >= 5 || (code !== '23505' && code !== '42P07')) throw error
    }
  }
}
