import type { SessionRepository } from '../store.js'
import type { Connection } from './connection.js'

interface SessionDbRow { account_id: string, csrf_token: string, created_at: string, expires_at: string }

export function sessionRepository ({ query }: Connection): SessionRepository {
  return {
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
  }
}
