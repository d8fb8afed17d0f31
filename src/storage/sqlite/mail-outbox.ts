import type Database from 'better-sqlite3'
import type { MailOutboxRepository, NewMail } from '../store.js'
import { preparedOnFirstUse } from './statements.js'
import { MAIL_COLUMNS, toMail, type MailDbRow } from '../mail-rows.js'

const prepare = (db: Database.Database) => ({
  insertMail: db.prepare(`INSERT INTO mail_outbox (recipient, subject, text_body, html_body, link, kind, created_at, next_attempt_at)
    VALUES (@recipient, @subject, @text, @html, @link, @kind, @now, @now) RETURNING id`).pluck(),
  dueMail: db.prepare(`SELECT ${MAIL_COLUMNS} FROM mail_outbox WHERE status = 'pending' AND next_attempt_at <= ? ORDER BY next_attempt_at, id LIMIT ?`),
  leaseMail: db.prepare('UPDATE mail_outbox SET next_attempt_at = ?, attempts = attempts + 1 WHERE id = ?'),
  markSent: db.prepare("UPDATE mail_outbox SET status = 'sent', finished_at = ?, last_error = NULL WHERE id = ?"),
  retryLater: db.prepare("UPDATE mail_outbox SET next_attempt_at = ?, last_error = ? WHERE id = ? AND status = 'pending'"),
  markFailed: db.prepare("UPDATE mail_outbox SET status = 'failed', finished_at = ?, last_error = ? WHERE id = ? AND status = 'pending'"),
  listAll: db.prepare(`SELECT ${MAIL_COLUMNS} FROM mail_outbox ORDER BY id DESC LIMIT ?`),
  listPending: db.prepare(`SELECT ${MAIL_COLUMNS} FROM mail_outbox WHERE status = 'pending' ORDER BY id DESC LIMIT ?`),
  countPending: db.prepare("SELECT count(*) FROM mail_outbox WHERE status = 'pending'").pluck()
})

/** Writes a message to the outbox; runs inside the caller's transaction. */
export type InsertMail = (mail: NewMail, now: number) => number

export function mailOutbox (db: Database.Database): { repository: MailOutboxRepository, insert: InsertMail } {
  const sql = preparedOnFirstUse(db, prepare)
  const insert: InsertMail = (mail, now) => sql().insertMail.get({ ...mail, now }) as number
  const repository: MailOutboxRepository = {
    enqueue: async (mail) => insert(mail, Date.now()),
    // IMMEDIATE holds the write lock from the read to the lease: no other connection, in any process, claims in between.
    claimDue: async (now, leaseUntil, limit) => db.transaction(() => {
      const rows = (sql().dueMail.all(now.getTime(), limit) as MailDbRow[]).map(toMail)
      for (const row of rows) sql().leaseMail.run(leaseUntil.getTime(), row.id)
      return rows.map((row) => ({ ...row, attempts: row.attempts + 1, nextAttemptAt: leaseUntil }))
    }).immediate(),
    markSent: async (id, at) => { sql().markSent.run(at.getTime(), id) },
    retryLater: async (id, nextAttemptAt, error) => { sql().retryLater.run(nextAttemptAt.getTime(), error, id) },
    markFailed: async (id, at, error) => { sql().markFailed.run(at.getTime(), error, id) },
    pendingCount: async () => sql().countPending.get() as number,
    list: async ({ pendingOnly, limit }) => ((pendingOnly ? sql().listPending : sql().listAll).all(limit) as MailDbRow[]).map(toMail)
  }
  return { repository, insert }
}
