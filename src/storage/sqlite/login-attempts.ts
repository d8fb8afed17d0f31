import type Database from 'better-sqlite3'
import type { LockedAttempt, LoginAttemptCount, LoginAttemptRepository } from '../store.js'
import { preparedOnFirstUse } from './statements.js'

// Every SET expression reads the row as it was, so both columns see the old window.
const RECORD_ATTEMPT = `INSERT INTO login_attempts (subject, attempts, window_started_at) VALUES (@subject, 1, @now)
  ON CONFLICT (subject) DO UPDATE SET
    attempts = CASE WHEN login_attempts.window_started_at < @windowStart THEN 1 ELSE login_attempts.attempts + 1 END,
    window_started_at = CASE WHEN login_attempts.window_started_at < @windowStart THEN @now ELSE login_attempts.window_started_at END
  RETURNING attempts, window_started_at`

const prepare = (db: Database.Database) => ({
  recordAttempt: db.prepare(RECORD_ATTEMPT),
  forgiveAttempt: db.prepare('UPDATE login_attempts SET attempts = attempts - 1 WHERE subject = ? AND attempts > 0'),
  clearAttempts: db.prepare('DELETE FROM login_attempts WHERE subject = ?'),
  deleteStaleAttempts: db.prepare('DELETE FROM login_attempts WHERE window_started_at < ?'),
  lockRow: db.prepare('SELECT attempts, window_started_at, locked_until FROM login_attempts WHERE subject = ?'),
  upsertLock: db.prepare(`INSERT INTO login_attempts (subject, attempts, window_started_at, locked_until) VALUES (@subject, @attempts, @now, @lockedUntil)
    ON CONFLICT (subject) DO UPDATE SET attempts = excluded.attempts, window_started_at = excluded.window_started_at, locked_until = excluded.locked_until`)
})

export function loginAttemptRepository (db: Database.Database): LoginAttemptRepository {
  const sql = preparedOnFirstUse(db, prepare)
  return {
    record: async (subjects, now, windowStart) => db.transaction((): LoginAttemptCount[] => subjects.map((subject) => {
      const row = sql().recordAttempt.get({ subject, now: now.getTime(), windowStart: windowStart.getTime() }) as { attempts: number, window_started_at: number }
      return { attempts: row.attempts, windowStartedAt: new Date(row.window_started_at) }
    })).immediate(),
    recordUnlessLocked: async (subject, now, { forgetBefore, lockMsAfter }) => db.transaction((): LockedAttempt => {
      const row = sql().lockRow.get(subject) as { attempts: number, window_started_at: number, locked_until: number } | undefined
      if (row !== undefined && row.locked_until > now.getTime()) return { allowed: false, lockedUntil: new Date(row.locked_until) }
      const attempts = row !== undefined && row.window_started_at >= forgetBefore.getTime() ? row.attempts + 1 : 1
      const lockMs = lockMsAfter(attempts)
      sql().upsertLock.run({ subject, attempts, now: now.getTime(), lockedUntil: lockMs > 0 ? now.getTime() + lockMs : 0 })
      return { allowed: true, attempts }
    }).immediate(),
    forgive: async (subject) => { sql().forgiveAttempt.run(subject) },
    clear: async (subject) => { sql().clearAttempts.run(subject) },
    deleteStaleBefore: async (windowStart) => sql().deleteStaleAttempts.run(windowStart.getTime()).changes
  }
}
