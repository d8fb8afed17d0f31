import type Database from 'better-sqlite3'
import type { AccountTokenPurpose, AccountTokenRepository, AccountTokenRow } from '../store.js'
import type { InsertMail } from './mail-outbox.js'
import { preparedOnFirstUse } from './statements.js'

interface TokenDbRow { token_hash: string, account_id: number, purpose: AccountTokenPurpose, created_at: number, expires_at: number, used_at: number | null }

const toToken = (row: TokenDbRow): AccountTokenRow => ({
  tokenHash: row.token_hash,
  accountId: row.account_id,
  purpose: row.purpose,
  createdAt: new Date(row.created_at),
  expiresAt: new Date(row.expires_at),
  usedAt: row.used_at === null ? null : new Date(row.used_at)
})

const prepare = (db: Database.Database) => ({
  insertToken: db.prepare(`INSERT INTO account_tokens (token_hash, account_id, purpose, created_at, expires_at)
    VALUES (@tokenHash, @accountId, @purpose, @now, @expiresAt)`),
  endTokens: db.prepare('UPDATE account_tokens SET used_at = @now WHERE account_id = @accountId AND purpose = @purpose AND used_at IS NULL'),
  tokenByHash: db.prepare('SELECT token_hash, account_id, purpose, created_at, expires_at, used_at FROM account_tokens WHERE token_hash = ?'),
  useToken: db.prepare(`UPDATE account_tokens SET used_at = @now
    WHERE token_hash = @tokenHash AND purpose = @purpose AND used_at IS NULL AND expires_at > @now RETURNING account_id`).pluck(),
  verifyAccount: db.prepare('UPDATE accounts SET email_verified_at = coalesce(email_verified_at, ?) WHERE id = ?'),
  setPassword: db.prepare('UPDATE accounts SET password_hash = ? WHERE id = ?'),
  endSessions: db.prepare('DELETE FROM sessions WHERE account_id = ?')
})

type Statements = ReturnType<typeof prepare>

/** Stores a token, ending the account's earlier unused ones of its purpose; runs inside the caller's transaction. */
export function insertToken (sql: Statements, token: { tokenHash: string, accountId: number, purpose: AccountTokenPurpose, expiresAt: Date }, now: number): void {
  sql.endTokens.run({ accountId: token.accountId, purpose: token.purpose, now })
  sql.insertToken.run({ ...token, expiresAt: token.expiresAt.getTime(), now })
}

export function accountTokenStatements (db: Database.Database): () => Statements {
  return preparedOnFirstUse(db, prepare)
}

export function accountTokenRepository (db: Database.Database, insertMail: InsertMail): AccountTokenRepository {
  const sql = accountTokenStatements(db)
  return {
    issue: async (token, mail) => {
      db.transaction(() => {
        const now = Date.now()
        insertToken(sql(), token, now)
        insertMail(mail, now)
      }).immediate()
    },
    find: async (tokenHash) => {
      const row = sql().tokenByHash.get(tokenHash) as TokenDbRow | undefined
      return row && toToken(row)
    },
    verifyEmail: async (tokenHash, now) => db.transaction((): number | undefined => {
      const accountId = sql().useToken.get({ tokenHash, purpose: 'verify', now: now.getTime() }) as number | undefined
      if (accountId !== undefined) sql().verifyAccount.run(now.getTime(), accountId)
      return accountId
    }).immediate(),
    resetPassword: async (tokenHash, now, passwordHash, mail) => db.transaction(() => {
      const accountId = sql().useToken.get({ tokenHash, purpose: 'reset', now: now.getTime() }) as number | undefined
      if (accountId === undefined) return undefined
      sql().endTokens.run({ accountId, purpose: 'reset', now: now.getTime() })
      sql().setPassword.run(passwordHash, accountId)
      // The link reached the mailbox: it shows the email reaches its owner, as a verification link does.
      sql().verifyAccount.run(now.getTime(), accountId)
      const endedSessions = sql().endSessions.run(accountId).changes
      insertMail(mail, now.getTime())
      return { accountId, endedSessions }
    }).immediate()
  }
}
