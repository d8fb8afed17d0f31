import type Database from 'better-sqlite3'
import { DuplicateEmailError, type AccountRepository, type AccountRow } from '../store.js'
import { accountTokenStatements, insertToken } from './account-tokens.js'
import type { InsertMail } from './mail-outbox.js'
import { preparedOnFirstUse } from './statements.js'

interface AccountDbRow { id: number, email: string, name: string | null, created_at: number, email_verified_at: number | null }
const ACCOUNT_COLUMNS = 'id, email, name, created_at, email_verified_at'

const toAccount = (row: AccountDbRow): AccountRow => ({
  id: row.id, email: row.email, name: row.name, createdAt: new Date(row.created_at), emailVerifiedAt: row.email_verified_at === null ? null : new Date(row.email_verified_at)
})

const prepare = (db: Database.Database) => ({
  insertAccount: db.prepare(`INSERT INTO accounts (email, name, password_hash, created_at, email_verified_at) VALUES (?, ?, ?, ?, ?) RETURNING ${ACCOUNT_COLUMNS}`),
  accountByEmail: db.prepare(`SELECT ${ACCOUNT_COLUMNS} FROM accounts WHERE email = ?`),
  accountById: db.prepare(`SELECT ${ACCOUNT_COLUMNS} FROM accounts WHERE id = ?`),
  credentialsByEmail: db.prepare('SELECT id, password_hash FROM accounts WHERE email = ?'),
  setPasswordHash: db.prepare('UPDATE accounts SET password_hash = ? WHERE id = ?'),
  markVerified: db.prepare('UPDATE accounts SET email_verified_at = coalesce(email_verified_at, ?) WHERE id = ?')
})

export function accountRepository (db: Database.Database, insertMail: InsertMail): AccountRepository {
  const sql = preparedOnFirstUse(db, prepare)
  const tokens = accountTokenStatements(db)
  return {
    create: async ({ email, name, passwordHash, verification }) => {
      try {
        return db.transaction(() => {
          const now = Date.now()
          const account = toAccount(sql().insertAccount.get(email, name, passwordHash ?? null, now, verification === undefined ? now : null) as AccountDbRow)
          if (verification !== undefined) {
            insertToken(tokens(), { tokenHash: verification.tokenHash, accountId: account.id, purpose: 'verify', expiresAt: verification.expiresAt }, now)
            insertMail(verification.mail(account), now)
          }
          return account
        }).immediate()
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
    setPasswordHash: async (accountId, passwordHash, mail) => db.transaction(() => {
      const changed = sql().setPasswordHash.run(passwordHash, accountId).changes === 1
      if (changed && mail !== undefined) insertMail(mail, Date.now())
      return changed
    }).immediate(),
    markEmailVerified: async (accountId, at) => sql().markVerified.run(at.getTime(), accountId).changes === 1
  }
}
