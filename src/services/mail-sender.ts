import nodemailer, { type Transporter } from 'nodemailer'
import type SMTPTransport from 'nodemailer/lib/smtp-transport/index.js'
import type { Logger } from 'pino'
import type { MailOutboxRepository, MailRow } from '../storage/store.js'
import { inRootSpan } from './tracing.js'

/** Messages one round claims: a sender works through a backlog a batch at a time. */
const BATCH = 10
/** A claimed message is no other sender's for this long: long enough for the SMTP timeouts below. */
const LEASE_MS = 2 * 60_000
/** The first retry waits this long, each next one twice as long, up to MAX_BACKOFF_MS. */
const FIRST_BACKOFF_MS = 1000
const MAX_BACKOFF_MS = 15 * 60_000
const SMTP_TIMEOUTS = { connectionTimeout: 10_000, greetingTimeout: 10_000, socketTimeout: 30_000 }

export interface MailSenderOptions {
  /** SMTP_URL; without it each message is written to the log at info instead. */
  smtpUrl: string | undefined
  /** MAIL_FROM. */
  from: string
  /** A message still not sent this long after it was written is given up (marked failed). */
  giveUpAfterMs: number
  log: Logger
  /** How often the outbox is looked at when it had nothing due. */
  pollMs?: number
}

/** How long to wait after the nth failed attempt. */
export function backoffMs (attempts: number): number {
  return Math.min(MAX_BACKOFF_MS, FIRST_BACKOFF_MS * 2 ** Math.max(0, attempts - 1))
}

/** What is kept of an SMTP failure: one line, never the message. */
const describe = (error: unknown): string => (error instanceof Error ? error.message : String(error)).replace(/\s+/g, ' ').slice(0, 500)

/**
 * Delivers the outbox. Every instance runs one; claims (store.mailOutbox.claimDue) hand each due
 * message to one sender at a time, so two instances never send it twice, and a message claimed by
 * an instance that died is due again when its lease ends. A failed attempt is retried with
 * exponential backoff until the message is older than `giveUpAfterMs`, when it is marked failed.
 */
export class MailSender {
  private readonly transport: Transporter | undefined
  private timer: NodeJS.Timeout | undefined
  private running: Promise<void> | undefined
  private closed = false

  constructor (private readonly outbox: MailOutboxRepository, private readonly options: MailSenderOptions) {
    this.transport = options.smtpUrl === undefined
      ? undefined
      : nodemailer.createTransport({ url: options.smtpUrl, ...SMTP_TIMEOUTS } as SMTPTransport.Options)
  }

  start (): void {
    this.schedule(0)
  }

  /** Looks at the outbox now rather than at the next poll (a message was just written). */
  nudge (): void {
    if (this.running === undefined && !this.closed) this.schedule(0)
  }

  /** Sends what is due; returns how many messages it handled. */
  async runOnce (now = new Date()): Promise<number> {
    const claimed = await this.outbox.claimDue(now, new Date(now.getTime() + LEASE_MS), BATCH)
    for (const mail of claimed) await this.deliver(mail)
    return claimed.length
  }

  async close (): Promise<void> {
    this.closed = true
    clearTimeout(this.timer)
    await this.running
    this.transport?.close()
  }

  private schedule (ms: number): void {
    clearTimeout(this.timer)
    this.timer = setTimeout(() => { this.round() }, ms)
    this.timer.unref()
  }

  private round (): void {
    if (this.closed || this.running !== undefined) return
    this.running = this.runOnce()
      .catch((error: unknown) => { this.options.log.warn({ err: error }, 'reading the mail outbox failed'); return 0 })
      .then((handled) => {
        this.running = undefined
        // A full batch means more may be due: go on at once.
        if (!this.closed) this.schedule(handled === BATCH ? 0 : this.options.pollMs ?? 1000)
      })
  }

  private async deliver (mail: MailRow): Promise<void> {
    try {
      await this.send(mail)
    } catch (error) {
      const now = new Date()
      if (now.getTime() - mail.createdAt.getTime() >= this.options.giveUpAfterMs) {
        this.options.log.error({ mailId: mail.id, to: mail.recipient, attempts: mail.attempts, err: describe(error) }, 'gave up sending a message')
        await this.outbox.markFailed(mail.id, now, describe(error))
      } else {
        this.options.log.warn({ mailId: mail.id, attempts: mail.attempts, err: describe(error) }, 'sending a message failed; it will be retried')
        await this.outbox.retryLater(mail.id, new Date(now.getTime() + backoffMs(mail.attempts)), describe(error))
      }
      return
    }
    await this.outbox.markSent(mail.id, new Date())
  }

  private async send (mail: MailRow): Promise<void> {
    if (this.transport === undefined) {
      this.options.log.info(`mail to ${mail.recipient}: "${mail.subject}" ${mail.link}`)
      return
    }
    const transport = this.transport
    // The span names the message's kind and attempt, never its recipient or link.
    await inRootSpan('mail delivery', { 'animal_store.mail.kind': mail.kind, 'animal_store.mail.attempt': mail.attempts }, async () => await transport.sendMail({
      from: this.options.from,
      to: mail.recipient,
      subject: mail.subject,
      text: mail.text,
      html: mail.html,
      // One id per outbox row: a receiving server (and the tests) can tell a repeat from a new message.
      messageId: `<outbox-${mail.id}.${mail.createdAt.getTime()}@animal-store>`
    }))
  }
}
