import type { Store } from '../store.js'
import { ReplicaReads } from '../replica-reads.js'
import { accountTokenRepository } from './account-tokens.js'
import { accountRepository } from './accounts.js'
import { apiKeyRepository } from './api-keys.js'
import { auditRepository } from './audit.js'
import { connectionTo } from './connection.js'
import { PostgresHosts, type PoolLike, type Replica } from './hosts.js'
import { idempotencyRepository } from './idempotency.js'
import { keyUsageRepository } from './key-usage.js'
import { loginAttemptRepository } from './login-attempts.js'
import { mailOutboxRepository } from './mail-outbox.js'
import { applyMigrations, warnAboutDurability, warnAboutReplication } from './migrate.js'
import { petRepository, petWrites } from './pets.js'
import { sessionRepository } from './sessions.js'
import { twoStepRepository } from './two-step.js'
import { settingOf } from './settings.js'

const CONNECT_TIMEOUT_MS = 3000
const STATEMENT_TIMEOUT_MS = 5000

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

/** The repositories on one pool, one per table: the primary's (which follows failovers), or a replica's. */
function storeOn (pool: PoolLike, options: PostgresStoreOptions): Store {
  // An idle connection dropped by the server must not take the process down.
  pool.on('error', options.onError)
  const db = connectionTo(pool)
  const writes = petWrites(db, options.writeBatchSize, options.writeBatchWaitMs)
  let closing: Promise<void> | undefined
  return {
    engine: 'postgres',
    pets: petRepository(db, writes),
    accounts: accountRepository(db),
    accountTokens: accountTokenRepository(db),
    mailOutbox: mailOutboxRepository(db),
    sessions: sessionRepository(db),
    twoStep: twoStepRepository(db),
    loginAttempts: loginAttemptRepository(db),
    apiKeys: apiKeyRepository(db),
    keyUsage: keyUsageRepository(db),
    audit: auditRepository(db),
    idempotency: idempotencyRepository(db),
    setting: settingOf(db),
    migrate: async () => {
      const applied = await applyMigrations(db.transaction)
      await warnAboutDurability(db.query, options.onWarning ?? (() => {}))
      return applied
    },
    groupCommitStats: () => ({ commits: writes.batches, syncs: undefined }),
    poolStats: () => ({ total: pool.totalCount, idle: pool.idleCount, waiting: pool.waitingCount }),
    ping: async () => { await db.query('SELECT 1') },
    close: () => (closing ??= writes.drain().then(async () => pool.end()))
  }
}
