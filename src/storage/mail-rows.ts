import type { MailRow, MailStatus } from './store.js'

/** A mail_outbox row as either engine returns it: PostgreSQL gives its BIGINT columns as strings. */
export interface MailDbRow {
  id: number | string
  recipient: string
  subject: string
  text_body: string
  html_body: string
  link: string
  kind: string
  status: MailStatus
  created_at: number | string
  next_attempt_at: number | string
  attempts: number
  last_error: string | null
  finished_at: number | string | null
}

export const MAIL_COLUMNS = 'id, recipient, subject, text_body, html_body, link, kind, status, created_at, next_attempt_at, attempts, last_error, finished_at'

export const toMail = (row: MailDbRow): MailRow => ({
  id: Number(row.id),
  recipient: row.recipient,
  subject: row.subject,
  text: row.text_body,
  html: row.html_body,
  link: row.link,
  kind: row.kind,
  status: row.status,
  createdAt: new Date(Number(row.created_at)),
  nextAttemptAt: new Date(Number(row.next_attempt_at)),
  attempts: Number(row.attempts),
  lastError: row.last_error,
  finishedAt: row.finished_at === null ? null : new Date(Number(row.finished_at))
})
