import type Database from 'better-sqlite3'
import type { TwoStepRepository } from '../store.js'
import type { InsertMail } from './mail-outbox.js'
import { preparedOnFirstUse } from './statements.js'

interface TwoStepDbRow { account_id: number, secret_sealed: string, enabled_at: number | null, last_step: number }

const prepare = (db: Database.Database) => ({
  find: db.prepare('SELECT account_id, secret_sealed, enabled_at, last_step FROM two_step WHERE account_id = ?'),
  startSetup: db.prepare(`INSERT INTO two_step (account_id, secret_sealed) VALUES (?, ?)
    ON CONFLICT (account_id) DO UPDATE SET secret_sealed = excluded.secret_sealed WHERE two_step.enabled_at IS NULL`),
  enable: db.prepare('UPDATE two_step SET enabled_at = ?, last_step = ? WHERE account_id = ? AND secret_sealed = ? AND enabled_at IS NULL'),
  deleteCodes: db.prepare('DELETE FROM recovery_codes WHERE account_id = ?'),
  insertCode: db.prepare('INSERT INTO recovery_codes (account_id, code_hash) VALUES (?, ?)'),
  useStep: db.prepare('UPDATE two_step SET last_step = ? WHERE account_id = ? AND enabled_at IS NOT NULL AND last_step < ?'),
  unusedCodes: db.prepare('SELECT code_hash FROM recovery_codes WHERE account_id = ? AND used_at IS NULL'),
  useCode: db.prepare('UPDATE recovery_codes SET used_at = ? WHERE account_id = ? AND code_hash = ? AND used_at IS NULL'),
  remove: db.prepare('DELETE FROM two_step WHERE account_id = ?')
})

export function twoStepRepository (db: Database.Database, insertMail: InsertMail): TwoStepRepository {
  const sql = preparedOnFirstUse(db, prepare)
  return {
    find: async (accountId) => {
      const row = sql().find.get(accountId) as TwoStepDbRow | undefined
      return row && { accountId: row.account_id, secretSealed: row.secret_sealed, enabledAt: row.enabled_at === null ? null : new Date(row.enabled_at), lastStep: row.last_step }
    },
    startSetup: async (accountId, secretSealed) => sql().startSetup.run(accountId, secretSealed).changes === 1,
    enable: async (accountId, secretSealed, step, at, hashes, mail) => db.transaction((): boolean => {
      if (sql().enable.run(at.getTime(), step, accountId, secretSealed).changes !== 1) return false
      sql().deleteCodes.run(accountId)
      for (const hash of hashes) sql().insertCode.run(accountId, hash)
      if (mail !== undefined) insertMail(mail, at.getTime())
      return true
    }).immediate(),
    useStep: async (accountId, step) => sql().useStep.run(step, accountId, step).changes === 1,
    unusedRecoveryCodes: async (accountId) => (sql().unusedCodes.all(accountId) as Array<{ code_hash: string }>).map((row) => row.code_hash),
    useRecoveryCode: async (accountId, codeHash, at) => sql().useCode.run(at.getTime(), accountId, codeHash).changes === 1,
    remove: async (accountId, mail) => db.transaction((): boolean => {
      sql().deleteCodes.run(accountId)
      const removed = sql().remove.run(accountId).changes === 1
      if (removed && mail !== undefined) insertMail(mail, Date.now())
      return removed
    }).immediate()
  }
}
