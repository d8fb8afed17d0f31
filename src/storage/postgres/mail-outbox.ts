import type pg from 'pg'
import type { MailOutboxRepository, NewMail } from '../store.js'
import type { Connection } from './connection.js'
import { MAIL_COLUMNS, toMail, type MailDbRow } from '../mail-rows.js'

/** Writes a message to the outbox on the transaction's client. */
export async function insertMail (client: pg.PoolClient, mail: NewMail, now: number): Promise<void> {
  await client.query(`INSERT INTO mail_outbox (recipient, subject, text_body, html_body, link, kind, created_at, next_attempt_at)
    VALUES ($1, $2, $3, $4, $5, $6, $7, $7)`, [mail.recipient, mail.subject, mail.text, mail.html, mail.link, mail.kind, now])
}

export function mailOutboxRepository ({ query }: Connection): MailOutboxRepository {
  return {
    enqueue: async (mail) => {
      const [row] = await query<{ id: string }>(`INSERT INTO mail_outbox (recipient, subject, text_body, html_body, link, kind, created_at, next_attempt_at)
        VALUES ($1, $2, $3, $4, $5, $6, $7, $7) RETURNING id`, [mail.recipient, mail.subject, mail.text, mail.html, mail.link, mail.kind, Date.now()])
      return Number(row?.id)
    },
    // SKIP LOCKED: a row another instance is claiming is passed over, never waited for nor returned twice.
    claimDue: async (now, leaseUntil, limit) => (await query<MailDbRow>(`UPDATE mail_outbox SET next_attempt_at = $2, attempts = attempts + 1
      WHERE id IN (SELECT id FROM mail_outbox WHERE status = 'pending' AND next_attempt_at <= $1 ORDER BY next_attempt_at, id LIMIT $3 FOR UPDATE SKIP LOCKED)
      RETURNING ${MAIL_COLUMNS}`, [now.getTime(), leaseUntil.getTime(), limit])).map(toMail).sort((a, b) => a.id - b.id),
    markSent: async (id, at) => { await query("UPDATE mail_outbox SET status = 'sent', finished_at = $1, last_error = NULL WHERE id = $2", [at.getTime(), id]) },
    retryLater: async (id, nextAttemptAt, error) => {
      await query("UPDATE mail_outbox SET next_attempt_at = $1, last_error = $2 WHERE id = $3 AND status = 'pending'", [nextAttemptAt.getTime(), error, id])
    },
    markFailed: async (id, at, error) => {
      await query("UPDATE mail_outbox SET status = 'failed', finished_at = $1, last_error = $2 WHERE id = $3 AND status = 'pending'", [at.getTime(), error, id])
    },
    pendingCount: async () => Number((await query<{ count: string }>("SELECT count(*) AS count FROM mail_outbox WHERE status = 'pending'"))[0]?.count ?? 0),
    list: async ({ pendingOnly, limit }) =>
      (await query<MailDbRow>(`SELECT ${MAIL_COLUMNS} FROM mail_outbox ${pendingOnly ? "WHERE status = 'pending'" : ''} ORDER BY id DESC LIMIT $1`, [limit])).map(toMail)
  }
}
