import type Database from 'better-sqlite3'
import type { AccountSessionRow, SessionRepository, SessionRow } from '../store.js'
import { preparedOnFirstUse } from './statements.js'

interface SessionDbRow {
  account_id: number
  csrf_token: string
  created_at: number
  expires_at: number
  last_seen_at: number | null
  client_address: string | null
  user_agent: string | null
}

const SESSION_COLUMNS = 'account_id, csrf_token, created_at, expires_at, last_seen_at, client_address, user_agent'

const toSession = (row: SessionDbRow): SessionRow => ({
  accountId: row.account_id,
  csrfToken: row.csrf_token,
  createdAt: new Date(row.created_at),
  expiresAt: new Date(row.expires_at),
  lastSeenAt: row.last_seen_at === null ? null : new Date(row.last_seen_at),
  clientAddress: row.client_address,
  userAgent: row.user_agent
})

const prepare = (db: Database.Database) => ({
  insertSession: db.prepare(`INSERT INTO sessions (token_hash, ${SESSION_COLUMNS}) VALUES (?, ?, ?, ?, ?, ?, ?, ?)`),
  sessionByHash: db.prepare(`SELECT ${SESSION_COLUMNS} FROM sessions WHERE token_hash = ?`),
  sessionsByAccount: db.prepare(`SELECT token_hash, ${SESSION_COLUMNS} FROM sessions WHERE account_id = ? AND expires_at > ? ORDER BY created_at DESC, token_hash`),
  extendSession: db.prepare('UPDATE sessions SET expires_at = ?, last_seen_at = ? WHERE token_hash = ?'),
  deleteSession: db.prepare('DELETE FROM sessions WHERE token_hash = ?'),
  deleteSessionsByAccount: db.prepare('DELETE FROM sessions WHERE account_id = ?'),
  deleteExpiredSessions: db.prepare('DELETE FROM sessions WHERE expires_at <= ?')
})

export function sessionRepository (db: Database.Database): SessionRepository {
  const sql = preparedOnFirstUse(db, prepare)
  return {
    create: async ({ tokenHash, accountId, csrfToken, createdAt, expiresAt, clientAddress, userAgent }) => {
      sql().insertSession.run(tokenHash, accountId, csrfToken, createdAt.getTime(), expiresAt.getTime(), createdAt.getTime(), clientAddress ?? null, userAgent ?? null)
    },
    findByTokenHash: async (tokenHash) => {
      const row = sql().sessionByHash.get(tokenHash) as SessionDbRow | undefined
      return row && toSession(row)
    },
    listByAccount: async (accountId, now) =>
      (sql().sessionsByAccount.all(accountId, now.getTime()) as Array<SessionDbRow & { token_hash: string }>)
        .map((row): AccountSessionRow => ({ ...toSession(row), tokenHash: row.token_hash })),
    extend: async (tokenHash, expiresAt, lastSeenAt) => { sql().extendSession.run(expiresAt.getTime(), lastSeenAt.getTime(), tokenHash) },
    delete: async (tokenHash) => { sql().deleteSession.run(tokenHash) },
    deleteByAccount: async (accountId) => sql().deleteSessionsByAccount.run(accountId).changes,
    deleteExpired: async (now) => sql().deleteExpiredSessions.run(now.getTime()).changes
  }
}
