import type pg from 'pg'
import type { AttemptLockPolicy, LockedAttempt, LoginAttemptCount, LoginAttemptRepository } from '../store.js'
import type { Connection } from './connection.js'

// Every SET expression reads the row as it was, so both columns see the old window.
const RECORD_ATTEMPT = `INSERT INTO login_attempts (subject, attempts, window_started_at) VALUES ($1, 1, $2)
  ON CONFLICT (subject) DO UPDATE SET
    attempts = CASE WHEN login_attempts.window_started_at < $3 THEN 1 ELSE login_attempts.attempts + 1 END,
    window_started_at = CASE WHEN login_attempts.window_started_at < $3 THEN $2 ELSE login_attempts.window_started_at END
  RETURNING attempts, window_started_at`

export function loginAttemptRepository ({ query, transaction }: Connection): LoginAttemptRepository {
  return {
    record: async (subjects, now, windowStart) => transaction(async (client): Promise<LoginAttemptCount[]> => {
      const counts: LoginAttemptCount[] = []
      for (const subject of subjects) {
        const { rows } = await client.query<{ attempts: number, window_started_at: string }>(RECORD_ATTEMPT, [subject, now.getTime(), windowStart.getTime()])
        const row = rows[0]
        if (row === undefined) throw new Error('recording a log-in attempt returned no row')
        counts.push({ attempts: Number(row.attempts), windowStartedAt: new Date(Number(row.window_started_at)) })
      }
      return counts
    }),
    recordUnlessLocked: async (subject, now, policy) => transaction(async (client) => await recordUnlessLocked(client, subject, now, policy)),
    forgive: async (subject) => { await query('UPDATE login_attempts SET attempts = attempts - 1 WHERE subject = $1 AND attempts > 0', [subject]) },
    clear: async (subject) => { await query('DELETE FROM login_attempts WHERE subject = $1', [subject]) },
    deleteStaleBefore: async (windowStart) =>
      (await query<{ subject: string }>('DELETE FROM login_attempts WHERE window_started_at < $1 RETURNING subject', [windowStart.getTime()])).length
  }
}

async function recordUnlessLocked (client: pg.PoolClient, subject: string, now: Date, { forgetBefore, lockMsAfter }: AttemptLockPolicy): Promise<LockedAttempt> {
  // The row exists before it is locked, so two first attempts take turns on it like any others.
  await client.query('INSERT INTO login_attempts (subject, attempts, window_started_at, locked_until) VALUES ($1, 0, 0, 0) ON CONFLICT (subject) DO NOTHING', [subject])
  const { rows } = await client.query<{ attempts: number, window_started_at: string, locked_until: string }>(
    'SELECT attempts, window_started_at, locked_until FROM login_attempts WHERE subject = $1 FOR UPDATE', [subject])
  const row = rows[0]
  if (row === undefined) throw new Error('the attempt row vanished inside its transaction')
  if (Number(row.locked_until) > now.getTime()) return { allowed: false, lockedUntil: new Date(Number(row.locked_until)) }
  const attempts = Number(row.window_started_at) >= forgetBefore.getTime() ? Number(row.attempts) + 1 : 1
  const lockMs = lockMsAfter(attempts)
  await client.query('UPDATE login_attempts SET attempts = $2, window_started_at = $3, locked_until = $4 WHERE subject = $1',
    [subject, attempts, now.getTime(), lockMs > 0 ? now.getTime() + lockMs : 0])
  return { allowed: true, attempts }
}
