import type { AccountSessionRow, SessionRepository, SessionRow } from '../store.js'
import type { Connection } from './connection.js'

interface SessionDbRow {
  account_id: string
  csrf_token: string
  created_at: string
  expires_at: string
  last_seen_at: string | null
  client_address: string | null
  user_agent: string | null
}

const SESSION_COLUMNS = 'account_id, csrf_token, created_at, expires_at, last_seen_at, client_address, user_agent'

const toSession = (row: SessionDbRow): SessionRow => ({
  accountId: Number(row.account_id),
  csrfToken: row.csrf_token,
  createdAt: new Date(Number(row.created_at)),
  expiresAt: new Date(Number(row.expires_at)),
  lastSeenAt: row.last_seen_at === null ? null : new Date(Number(row.last_seen_at)),
  clientAddress: row.client_address,
  userAgent: row.user_agent
})

export function sessionRepository ({ query }: Connection): SessionRepository {
  return {
    create: async ({ tokenHash, accountId, csrfToken, createdAt, expiresAt, clientAddress, userAgent }) => {
      await query(`INSERT INTO sessions (token_hash, ${SESSION_COLUMNS}) VALUES ($1, $2, $3, $4, $5, $6, $7, $8)`,
        [tokenHash, accountId, csrfToken, createdAt.getTime(), expiresAt.getTime(), createdAt.getTime(), clientAddress ?? null, userAgent ?? null])
    },
    findByTokenHash: async (tokenHash) => {
      const [row] = await query<SessionDbRow>(`SELECT ${SESSION_COLUMNS} FROM sessions WHERE token_hash = $1`, [tokenHash])
      return row && toSession(row)
    },
    listByAccount: async (accountId, now) =>
      (await query<SessionDbRow & { token_hash: string }>(
        `SELECT token_hash, ${SESSION_COLUMNS} FROM sessions WHERE account_id = $1 AND expires_at > $2 ORDER BY created_at DESC, token_hash`,
        [accountId, now.getTime()]
      )).map((row): AccountSessionRow => ({ ...toSession(row), tokenHash: row.token_hash })),
    extend: async (tokenHash, expiresAt, lastSeenAt) => {
      await query('UPDATE sessions SET expires_at = $1, last_seen_at = $2 WHERE token_hash = $3', [expiresAt.getTime(), lastSeenAt.getTime(), tokenHash])
    },
    delete: async (tokenHash) => { await query('DELETE FROM sessions WHERE token_hash = $1', [tokenHash]) },
    deleteByAccount: async (accountId) =>
      (await query<{ token_hash: string }>('DELETE FROM sessions WHERE account_id = $1 RETURNING token_hash', [accountId])).length,
    deleteExpired: async (now) =>
      (await query<{ token_hash: string }>('DELETE FROM sessions WHERE expires_at <= $1 RETURNING token_hash', [now.getTime()])).length
  }
}
