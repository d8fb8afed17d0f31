import { parseArgs } from 'node:util'
import type { MailRow } from '../../storage/store.js'
import type { Command } from '../context.js'
import { integerOption, table } from '../format.js'
import { withStore } from '../with-store.js'

const DEFAULT_LIMIT = 50
const MAX_LIMIT = 1000

/** What the listing shows of a message: never its body, whose link may hold a live token. */
function toJson (mail: MailRow): object {
  return {
    id: mail.id,
    status: mail.status,
    kind: mail.kind,
    to: mail.recipient,
    subject: mail.subject,
    createdAt: mail.createdAt.toISOString(),
    attempts: mail.attempts,
    nextAttemptAt: mail.status === 'pending' ? mail.nextAttemptAt.toISOString() : null,
    finishedAt: mail.finishedAt?.toISOString() ?? null,
    lastError: mail.lastError
  }
}

export const mailOutbox: Command = {
  usage: 'animal-store mail outbox [--pending] [--limit N] [--json]',
  summary: 'The mail outbox, newest first: each message, its state (pending, sent, failed), attempts and last error.',
  description: [
    'Options:',
    '  --pending     only the messages not sent yet (nor given up)',
    `  --limit N     at most N messages, 1 to ${MAX_LIMIT} (default ${DEFAULT_LIMIT})`,
    '  --json        an array instead of a table',
    '',
    'Every instance of `serve` sends the outbox: with SMTP_URL through that server, otherwise by writing each',
    'message to its log. A failed attempt is retried with exponential backoff; a message still not sent',
    'MAIL_GIVE_UP_AFTER_MS after it was written is marked failed. Links are not shown: they may still work.',
    '',
    'With --json, an array, newest first, of',
    '  { "id": n, "status": "pending", "kind": "verify_email", "to": "…", "subject": "…", "createdAt": "<ISO>",',
    '    "attempts": n, "nextAttemptAt": "<ISO>" or null, "finishedAt": "<ISO>" or null, "lastError": "…" or null }'
  ].join('\n'),
  run: async (args, context) => {
    const { values } = parseArgs({ args, options: { pending: { type: 'boolean' }, limit: { type: 'string' }, json: { type: 'boolean' } }, strict: true })
    const limit = integerOption(values.limit, '--limit', DEFAULT_LIMIT, 1, MAX_LIMIT)
    const rows = await withStore(context, (store) => store.mailOutbox.list({ pendingOnly: values.pending === true, limit }))
    if (values.json === true) {
      context.stdout(JSON.stringify(rows.map(toJson), null, 2))
      return 0
    }
    if (rows.length === 0) {
      context.stdout(values.pending === true ? 'No message is waiting to be sent.' : 'The outbox is empty.')
      return 0
    }
    const cells = rows.map((mail) => [String(mail.id), mail.status, mail.kind, mail.recipient, mail.createdAt.toISOString(), String(mail.attempts), mail.lastError ?? ''])
    context.stdout(table([['ID', 'STATUS', 'KIND', 'TO', 'WRITTEN', 'ATTEMPTS', 'LAST ERROR'], ...cells]))
    return 0
  }
}
