import { DuplicateEmailError, type AccountRepository, type AccountRow } from '../store.js'
import type { Connection } from './connection.js'

interface AccountDbRow { id: string, email: string, name: string | null, created_at: string }
const ACCOUNT_COLUMNS = 'id, email, name, created_at'

const toAccount = (row: AccountDbRow): AccountRow =>
  ({ id: Number(row.id), email: row.email, name: row.name, createdAt: new Date(Number(row.created_at)) })

export function accountRepository ({ query }: Connection): AccountRepository {
  return {
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
  }
}
