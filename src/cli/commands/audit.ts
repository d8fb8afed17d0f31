import { parseArgs } from 'node:util'
import { accountAuditEvents } from '../../services/accounts.js'
import { AUDIT_EVENTS, type AuditEvent } from '../../storage/store.js'
import { CliError, type Command } from '../context.js'
import { integerOption, table } from '../format.js'
import { withStore } from '../with-store.js'

export const AUDIT_DEFAULT_LIMIT = 50
export const AUDIT_MAX_LIMIT = 1000

function toJson (event: AuditEvent): object {
  return { id: event.id, at: event.at.toISOString(), event: event.event, actor: event.actor, address: event.address, keyId: event.keyId, detail: event.detail }
}

export const audit: Command = {
  usage: 'animal-store audit --email E [--limit N] [--before ID] [--json]',
  summary: "The account's audit trail, newest first: time, event, actor, address, key id, detail.",
  description: [
    'Options:',
    '  --email E     the account (required)',
    `  --limit N     at most N events, 1 to ${AUDIT_MAX_LIMIT} (default ${AUDIT_DEFAULT_LIMIT})`,
    '  --before ID   only events older than the event with that id (to page back through the trail)',
    '  --json        an array instead of a table',
    '',
    `Events: ${AUDIT_EVENTS.join(', ')}.`,
    'Actors: cli (this tool), portal (the developer portal), api (a request to the API; key_expired and',
    'scope_denied are recorded once per key, scope_denied at most once per key per hour). The address is the',
    "client's, where there is a client. No event holds a secret. The trail is append-only: the database refuses",
    'to change, delete or truncate events.',
    '',
    'With --json, an array, newest first, of',
    '  { "id": n, "at": "<ISO>", "event": "key_created", "actor": "cli", "address": null, "keyId": "key_…", "detail": "…" }',
    'with null where there is no address, key or detail.'
  ].join('\n'),
  run: async (args, context) => {
    const { values } = parseArgs({ args, options: { email: { type: 'string' }, limit: { type: 'string' }, before: { type: 'string' }, json: { type: 'boolean' } }, strict: true })
    if (values.email === undefined) throw new CliError('--email is required')
    const email = values.email
    const limit = integerOption(values.limit, '--limit', AUDIT_DEFAULT_LIMIT, 1, AUDIT_MAX_LIMIT)
    const beforeId = values.before === undefined ? undefined : integerOption(values.before, '--before', 0, 1, Number.MAX_SAFE_INTEGER)
    const { account, events } = await withStore(context, (store) => accountAuditEvents(store, email, { limit, ...(beforeId === undefined ? {} : { beforeId }) }))
    if (values.json === true) {
      context.stdout(JSON.stringify(events.map(toJson), null, 2))
      return 0
    }
    if (events.length === 0) {
      context.stdout(`No events for ${account.email}${beforeId === undefined ? '' : ` before event ${beforeId}`}.`)
      return 0
    }
    const cells = events.map((event) => [String(event.id), event.at.toISOString(), event.event, event.actor, event.address ?? '-', event.keyId ?? '-', event.detail ?? ''])
    context.stdout(table([['ID', 'TIME', 'EVENT', 'ACTOR', 'ADDRESS', 'KEY', 'DETAIL'], ...cells]))
    const oldest = events.at(-1)
    if (events.length === limit && oldest !== undefined) {
      context.stdout(`Older events may follow: animal-store audit --email ${account.email} --before ${oldest.id}${limit === AUDIT_DEFAULT_LIMIT ? '' : ` --limit ${limit}`}`)
    }
    return 0
  }
}
