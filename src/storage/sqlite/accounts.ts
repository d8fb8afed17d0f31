import type Database from 'better-sqlite3'
import { DuplicateEmailError, type AccountRepository, type AccountRow } from '../store.js'
import { preparedOnFirstUse } from './statements.js'

interface AccountDbRow { id: number, email: string, name: string | null, created_at: number }
const ACCOUNT_COLUMNS = 'id, email, name, created_at'

const toAccount = (row: AccountDbRow): AccountRow =>
  ({ id: row.id, email: row.email, name: row.name, createdAt: new Date(row.created_at) })

const prepare = (db: Database.Database) => ({
  insertAccount: db.prepare(`INSERT INTO accounts (email, name, password_hash, created_at) VALUES (?, ?, ?, ?) RETURNING ${ACCOUNT_COLUMNS}`),
  accountByEmail: db.prepare(`SELECT ${ACCOUNT_COLUMNS} FROM accounts WHERE email = ?`),
  accountById: db.prepare(`SELECT ${ACCOUNT_COLUMNS} FROM accounts WHERE id = ?`),
  credentialsByEmail: db.prepare('SELECT id, password_hash FROM accounts WHERE email = ?'),
  setPasswordHash: db.prepare('UPDATE accounts SET password_hash = ? WHERE id = ?')
})

export function accountRepository (db: Database.Database): AccountRepository {
  const sql = preparedOnFirstUse(db, prepare)
  return {
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
  }
}
