import { mkdirSync } from 'node:fs'
import { dirname } from 'node:path'
import type Database from 'better-sqlite3'
import type { Store } from '../store.js'
import { accountTokenRepository } from './account-tokens.js'
import { accountRepository } from './accounts.js'
import { apiKeyRepository } from './api-keys.js'
import { auditRepository } from './audit.js'
import { openDatabase, type SqliteSynchronous } from './database.js'
import { idempotencyRepository } from './idempotency.js'
import { keyUsageRepository } from './key-usage.js'
import { loginAttemptRepository } from './login-attempts.js'
import { mailOutbox } from './mail-outbox.js'
import { applyMigrations } from './migrate.js'
import { openPetWrites, type PetWrites } from './pet-writes.js'
import { petRepository } from './pets.js'
import { sessionRepository } from './sessions.js'
import { twoStepRepository } from './two-step.js'
import { settingOf } from './settings.js'

/** Most creates that share one transaction (group commit); WRITE_BATCH_SIZE=1 turns group commit off. */
export const DEFAULT_WRITE_BATCH = 256

export function openSqliteStore (path: string, options: { writeBatchSize?: number, writeBatchWaitMs?: number, synchronous?: SqliteSynchronous } = {}): Store {
  const synchronous = options.synchronous ?? 'full'
  const db = openDatabase(path, synchronous === 'full' ? 'FULL' : 'OFF')
  const petWrites = openPetWrites(path, { synchronous, batchSize: options.writeBatchSize ?? DEFAULT_WRITE_BATCH, batchWaitMs: options.writeBatchWaitMs, mainDb: db })
  return buildStore(db, petWrites)
}

/** One repository per table, each preparing its statements on first use. */
function buildStore (db: Database.Database, petWrites: PetWrites): Store {
  const outbox = mailOutbox(db)
  return {
    engine: 'sqlite',
    pets: petRepository(db, petWrites),
    accounts: accountRepository(db, outbox.insert),
    accountTokens: accountTokenRepository(db, outbox.insert),
    mailOutbox: outbox.repository,
    sessions: sessionRepository(db),
    twoStep: twoStepRepository(db, outbox.insert),
    loginAttempts: loginAttemptRepository(db),
    apiKeys: apiKeyRepository(db, outbox.insert),
    keyUsage: keyUsageRepository(db),
    audit: auditRepository(db),
    idempotency: idempotencyRepository(db),
    setting: settingOf(db),
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
