import type { Logger } from 'pino'
import type { Config } from '../config.js'
import type { Store } from '../storage/store.js'
import { remindExpiringKeys } from './account-mail.js'
import { mailLinksOf } from './mail-messages.js'
import { MailSender } from './mail-sender.js'

/** How often each instance looks for keys to remind of their expiry (whichever instance marks a key first writes its one reminder). */
const REMINDER_EVERY_MS = 10 * 60_000
/** The first look, shortly after start-up rather than in the middle of it. */
const FIRST_REMINDER_AFTER_MS = 5000

/** The mail work of one instance (serve): the outbox's sender and the periodic expiry reminder. */
export function startMailJobs (config: Readonly<Config>, store: Store, log: Logger): { close: () => Promise<void> } {
  const sender = new MailSender(store.mailOutbox, { smtpUrl: config.smtpUrl, from: config.mailFrom, giveUpAfterMs: config.mailGiveUpAfterMs, log })
  sender.start()
  // Debug, not info: the start-up stays one line, and each message's own line says where it went.
  if (config.smtpUrl === undefined) log.debug('SMTP_URL is not set: mail (verification and reset links, security notices) is written to this log instead of sent')
  const links = mailLinksOf(config)
  let reminding: Promise<unknown> | undefined
  const remind = (): void => {
    if (reminding !== undefined) return
    reminding = remindExpiringKeys(store, links)
      .then((written) => { if (written > 0) sender.nudge() })
      .catch((error: unknown) => { log.warn({ err: error }, 'looking for keys that expire soon failed') })
      .finally(() => { reminding = undefined })
  }
  const first = setTimeout(remind, FIRST_REMINDER_AFTER_MS).unref()
  const every = setInterval(remind, REMINDER_EVERY_MS).unref()
  return {
    close: async () => {
      clearTimeout(first)
      clearInterval(every)
      await reminding
      await sender.close()
    }
  }
}
