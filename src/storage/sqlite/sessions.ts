import type Database from 'better-sqlite3'
import type { SessionRepository } from '../store.js'
import { preparedOnFirstUse } from './statements.js'

interface SessionDbRow { account_id: number, csrf_token: string, created_at: number, expires_at: number }

const prepare = (db: Database.Database) => ({
  insertSession: db.prepare('INSERT INTO sessions (token_hash, account_id, csrf_token, created_at, expires_at) VALUES (?, ?, ?, ?, ?)'),
  sessionByHash: db.prepare('SELECT account_id, csrf_token, created_at, expires_at FROM sessions WHERE token_hash = ?'),
  extendSession: db.prepare('UPDATE sessions SET expires_at = ? WHERE token_hash = ?'),
  deleteSession: db.prepare('DELETE FROM sessions WHERE token_hash = ?'),
  deleteSessionsByAccount: db.prepare('DELETE FROM sessions WHERE account_id = ?'),
  deleteExpiredSessions: db.prepare('DELETE FROM sessions WHERE expires_at <= ?')
})

export function sessionRepository (db: Database.Database): SessionRepository {
  const sql = preparedOnFirstUse(db, prepare)
  return {
    create: async ({ tokenHash, accountId, csrfToken, createdAt, expiresAt }) => {
      sql().insertSession.run(tokenHash, accountId, csrfToken, createdAt.getTime(), expiresAt.getTime())
    },
    findByTokenHash: async (tokenHash) => {
      const row = sql().sessionByHash.get(tokenHash) as SessionDbRow | undefined
      return row && { accountId: row.account_id, csrfToken: row.csrf_token, createdAt: new Date(row.created_at), expiresAt: new Date(row.expires_at) }
    },
    extend: async (tokenHash, expiresAt) => { sql().extendSession.run(expiresAt.getTime(), tokenHash) },
    delete: async (tokenHash) => { sql().deleteSession.run(tokenHash) },
    deleteByAccount: async (accountId) => sql().deleteSessionsByAccount.run(accountId).changes,
    deleteExpired: async (now) => sql().deleteExpiredSessions.run(now.getTime()).changes
  }
}
