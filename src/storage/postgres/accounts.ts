import { DuplicateEmailError, type AccountRepository, type AccountRow } from '../store.js'
import { insertToken } from './account-tokens.js'
import type { Connection } from './connection.js'
import { insertMail } from './mail-outbox.js'

interface AccountDbRow { id: string, email: string, name: string | null, created_at: string, email_verified_at: string | null }
const ACCOUNT_COLUMNS = 'id, email, name, created_at, email_verified_at'

const toAccount = (row: AccountDbRow): AccountRow => ({
  id: Number(row.id), email: row.email, name: row.name, createdAt: new Date(Number(row.created_at)), emailVerifiedAt: row.email_verified_at === null ? null : new Date(Number(row.email_verified_at))
})

export function accountRepository ({ query, transaction }: Connection): AccountRepository {
  return {
    create: async ({ email, name, passwordHash, verification }) => {
      try {
        return await transaction(async (client) => {
          const now = Date.now()
          const { rows: [row] } = await client.query<AccountDbRow>(`INSERT INTO accounts (email, name, password_hash, created_at, email_verified_at) VALUES ($1, $2, $3, $4, $5) RETURNING ${ACCOUNT_COLUMNS}`,
            [email, name, passwordHash ?? null, now, verification === undefined ? now : null])
          const account = toAccount(row as AccountDbRow)
          if (verification !== undefined) {
            await insertToken(client, { tokenHash: verification.tokenHash, accountId: account.id, purpose: 'verify', expiresAt: verification.expiresAt }, now)
            await insertMail(client, verification.mail(account), now)
          }
          return account
        })
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
    setPasswordHash: async (accountId, passwordHash, mail) => await transaction(async (client) => {
      const { rowCount } = await client.query('UPDATE accounts SET password_hash = $1 WHERE id = $2', [passwordHash, accountId])
      if (rowCount === 1 && mail !== undefined) await insertMail(client, mail, Date.now())
      return rowCount === 1
    }),
    markEmailVerified: async (accountId, at) =>
      (await query<{ id: string }>('UPDATE accounts SET email_verified_at = coalesce(email_verified_at, $1) WHERE id = $2 RETURNING id', [at.getTime(), accountId])).length === 1
  }
}
