import type pg from 'pg'
import type { AccountTokenPurpose, AccountTokenRepository } from '../store.js'
import type { Connection } from './connection.js'
import { insertMail } from './mail-outbox.js'

interface TokenDbRow { token_hash: string, account_id: string, purpose: AccountTokenPurpose, created_at: string, expires_at: string, used_at: string | null }

/** Stores a token on the transaction's client, ending the account's earlier unused ones of its purpose. */
export async function insertToken (client: pg.PoolClient, token: { tokenHash: string, accountId: number, purpose: AccountTokenPurpose, expiresAt: Date }, now: number): Promise<void> {
  await client.query('UPDATE account_tokens SET used_at = $1 WHERE account_id = $2 AND purpose = $3 AND used_at IS NULL', [now, token.accountId, token.purpose])
  await client.query('INSERT INTO account_tokens (token_hash, account_id, purpose, created_at, expires_at) VALUES ($1, $2, $3, $4, $5)',
    [token.tokenHash, token.accountId, token.purpose, now, token.expiresAt.getTime()])
}

/** Uses the token if it is unused and unexpired; its account id, or undefined. The row lock makes a concurrent second use wait, then find it used. */
async function useToken (client: pg.PoolClient, tokenHash: string, purpose: AccountTokenPurpose, now: number): Promise<number | undefined> {
  const { rows: [row] } = await client.query<{ account_id: string }>(`UPDATE account_tokens SET used_at = $1
    WHERE token_hash = $2 AND purpose = $3 AND used_at IS NULL AND expires_at > $1 RETURNING account_id`, [now, tokenHash, purpose])
  return row === undefined ? undefined : Number(row.account_id)
}

export function accountTokenRepository ({ query, transaction }: Connection): AccountTokenRepository {
  return {
    issue: async (token, mail) => {
      await transaction(async (client) => {
        const now = Date.now()
        await insertToken(client, token, now)
        await insertMail(client, mail, now)
      })
    },
    find: async (tokenHash) => {
      const [row] = await query<TokenDbRow>('SELECT token_hash, account_id, purpose, created_at, expires_at, used_at FROM account_tokens WHERE token_hash = $1', [tokenHash])
      return row && {
        tokenHash: row.token_hash,
        accountId: Number(row.account_id),
        purpose: row.purpose,
        createdAt: new Date(Number(row.created_at)),
        expiresAt: new Date(Number(row.expires_at)),
        usedAt: row.used_at === null ? null : new Date(Number(row.used_at))
      }
    },
    verifyEmail: async (tokenHash, now) => await transaction(async (client) => {
      const accountId = await useToken(client, tokenHash, 'verify', now.getTime())
      if (accountId !== undefined) await client.query('UPDATE accounts SET email_verified_at = coalesce(email_verified_at, $1) WHERE id = $2', [now.getTime(), accountId])
      return accountId
    }),
    resetPassword: async (tokenHash, now, passwordHash, mail) => await transaction(async (client) => {
      const at = now.getTime()
      const accountId = await useToken(client, tokenHash, 'reset', at)
      if (accountId === undefined) return undefined
      await client.query("UPDATE account_tokens SET used_at = $1 WHERE account_id = $2 AND purpose = 'reset' AND used_at IS NULL", [at, accountId])
      // The link reached the mailbox: it shows the email reaches its owner, as a verification link does.
      await client.query('UPDATE accounts SET password_hash = $1, email_verified_at = coalesce(email_verified_at, $2) WHERE id = $3', [passwordHash, at, accountId])
      const { rowCount } = await client.query('DELETE FROM sessions WHERE account_id = $1', [accountId])
      await insertMail(client, mail, at)
      return { accountId, endedSessions: rowCount ?? 0 }
    })
  }
}
