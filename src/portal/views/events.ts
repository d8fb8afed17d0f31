import { html, type SafeHtml } from '../../core/html.js'
import { KEY_ID_PATTERN } from '../../core/api-keys.js'
import type { AccountRow, ApiKeyRow, AuditActor, AuditEvent, AuditEventType } from '../../storage/store.js'
import { keyLink, seconds } from './key-table.js'
import { page, type AssetUrls } from './layout.js'

/** Each audit event in words (docs/api-keys.md lists them). */
export const EVENT_WORDS: Readonly<Record<AuditEventType, string>> = {
  account_created: 'Account created',
  password_set: 'Password set',
  login_succeeded: 'Logged in',
  login_failed: 'Log-in failed',
  key_created: 'Key created',
  key_rolled: 'Key rolled',
  key_revoked: 'Key revoked',
  key_expired: 'Expired key presented',
  scope_denied: 'Request refused: scope missing',
  two_step_enabled: 'Two-step verification turned on',
  two_step_disabled: 'Two-step verification turned off',
  sessions_ended: 'Sessions signed out',
  verification_sent: 'Verification link sent',
  email_verified: 'Email address verified',
  password_reset_requested: 'Password reset link sent',
  password_reset: 'Password reset',
  key_expiry_reminded: 'Key expiry reminder sent'
}

const ACTOR_WORDS: Readonly<Record<AuditActor, string>> = { portal: 'Portal', cli: 'Operator (command line)', api: 'API' }

export interface EventsPageOptions {
  assets: AssetUrls
  session: { account: AccountRow, csrfToken: string }
  events: readonly AuditEvent[]
  /** The id to ask for older events before, when there are more. */
  olderBefore: number | undefined
  /** Whether this page starts below the newest events. */
  paged: boolean
  /** The account's keys the events name, by id: shown by label and prefix, as the keys page shows them. */
  keys: ReadonlyMap<string, ApiKeyRow>
}

/** Key ids and ISO 8601 times as an event's detail holds them (services/accounts.ts, services/audit-trail.ts). */
const DETAIL_REFERENCE = new RegExp(`(${KEY_ID_PATTERN})|(\\d{4}-\\d{2}-\\d{2}T\\d{2}:\\d{2}:\\d{2}(?:\\.\\d+)?Z)`, 'g')

/** Key ids named in events' details, for the page to look up. */
export function keyIdsInDetail (detail: string | null): string[] {
  return [...(detail ?? '').matchAll(DETAIL_REFERENCE)].flatMap((match) => match[1] === undefined ? [] : [match[1]])
}

/** An event's detail with its key ids and times shown as the rest of the page shows them. */
function detailText (detail: string, keys: ReadonlyMap<string, ApiKeyRow>): SafeHtml {
  const parts: Array<string | SafeHtml> = []
  let last = 0
  for (const match of detail.matchAll(DETAIL_REFERENCE)) {
    parts.push(detail.slice(last, match.index))
    const [text, keyId] = match
    parts.push(keyId === undefined ? seconds(new Date(text)) : keyLink(keyId, keys.get(keyId)))
    last = match.index + text.length
  }
  parts.push(detail.slice(last))
  return html`${parts}`
}

export function eventsPage ({ assets, session, events, olderBefore, paged, keys }: EventsPageOptions): string {
  return page({
    title: 'Events',
    assets,
    session,
    main: html`<h1>Events on your account</h1>
<p>What happened to your account and its keys, the newest first: in the portal, at the command line (an operator) and on the API
(an expired key presented, a request refused for a scope the key lacks). Events are never changed or deleted.</p>
${events.length === 0
  ? html`<p>${paged ? 'No older events.' : 'No events yet.'}</p>`
  : html`<div class="table-scroll">
  <table class="keys events">
    <caption class="visually-hidden">Events on your account, newest first</caption>
    <thead><tr><th scope="col">Time</th><th scope="col">Event</th><th scope="col">By</th><th scope="col">Address</th><th scope="col">Key</th><th scope="col">Detail</th></tr></thead>
    <tbody>
    ${events.map((event) => html`<tr data-event="${event.event}">
      <td data-label="Time">${seconds(event.at)}</td>
      <td data-label="Event">${EVENT_WORDS[event.event]}</td>
      <td data-label="By">${ACTOR_WORDS[event.actor]}</td>
      <td data-label="Address">${event.address ?? html`<span class="muted">none</span>`}</td>
      <td data-label="Key">${event.keyId === null ? '' : keyLink(event.keyId, keys.get(event.keyId))}</td>
      <td data-label="Detail">${event.detail === null ? '' : detailText(event.detail, keys)}</td>
    </tr>`)}
    </tbody>
  </table>
  </div>`}
<nav class="pages" aria-label="Pages of events">
  ${paged ? html`<a href="/portal/events">Newest events</a>` : ''}
  ${olderBefore === undefined ? '' : html`<a href="/portal/events?before=${olderBefore}" rel="next">Older events</a>`}
  <a href="/portal/keys">Back to your keys</a>
</nav>`
  })
}
