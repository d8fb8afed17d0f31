import { html, type SafeHtml } from '../../core/html.js'
import type { ApiKeyRow } from '../../storage/store.js'

/** A date and its time of day (to the minute or the second), each kept whole by portal.css: a narrow column breaks between them only. */
const stamp = (date: Date, end: 16 | 19): SafeHtml => {
  const iso = date.toISOString()
  return html`<time datetime="${iso}"><span>${iso.slice(0, 10)}</span> <span>${iso.slice(11, end)} UTC</span></time>`
}

export const dateTime = (date: Date): SafeHtml => stamp(date, 16)

export const seconds = (date: Date): SafeHtml => stamp(date, 19)

const MINUTE_MS = 60_000
const DAY_MS = 24 * 60 * MINUTE_MS
/** A key expiring sooner than this is flagged on the keys page. */
export const EXPIRY_WARNING_MS = 7 * DAY_MS

const plural = (count: number, unit: string): string => `${count} ${unit}${count === 1 ? '' : 's'}`

/** How far away a time is, as people say it: "in 5 days", "in 3 hours", "2 minutes ago" (whole units, rounded down from the nearest minute). */
export function relativeTime (at: Date, now: number): string {
  const ms = at.getTime() - now
  const minutes = Math.round(Math.abs(ms) / MINUTE_MS)
  const words = minutes < 1
    ? 'less than a minute'
    : minutes < 60
      ? plural(minutes, 'minute')
      : minutes < 48 * 60 ? plural(Math.floor(minutes / 60), 'hour') : plural(Math.floor(minutes / (24 * 60)), 'day')
  return ms >= 0 ? `in ${words}` : `${words} ago`
}

/** A date (and, within two days, the time) with how far away it is: "2026-12-01 (in 5 days)". */
export function when (at: Date, now: number): SafeHtml {
  const near = Math.abs(at.getTime() - now) < 2 * DAY_MS
  return html`${near ? dateTime(at) : html`<time datetime="${at.toISOString()}">${at.toISOString().slice(0, 10)}</time>`} (${relativeTime(at, now)})`
}

/** Whether a live key stops working within EXPIRY_WARNING_MS; a rolled key ending after its grace period is expected, not a surprise. */
export function expiresSoon (key: ApiKeyRow, now: number): boolean {
  return key.live && key.rolledTo === null && key.expiresAt !== null && key.expiresAt.getTime() - now < EXPIRY_WARNING_MS
}

/** How a key ended: revoked, or expired (a rolled key past its grace period included); whichever came first. */
function endOf (key: ApiKeyRow): { how: 'Revoked' | 'Expired', at: Date } | undefined {
  if (key.live) return undefined
  if (key.revokedAt !== null && (key.expiresAt === null || key.revokedAt <= key.expiresAt)) return { how: 'Revoked', at: key.revokedAt }
  if (key.expiresAt !== null) return { how: 'Expired', at: key.expiresAt }
  return undefined
}

export const keyName = (key: Pick<ApiKeyRow, 'label' | 'prefix'>): string => key.label ?? key.prefix

export function scopesList (scopes: readonly string[]): SafeHtml {
  return scopes.length === 0
    ? html`<span class="muted">none</span>`
    : html`<span class="scopes">${scopes.map((scope, index) => html`${index === 0 ? '' : ' '}<code>${scope}</code>`)}</span>`
}

export function expiryText (key: ApiKeyRow, now: number): SafeHtml {
  if (key.expiresAt === null) return html`<span class="muted">Never</span>`
  if (!key.live) return html`${key.revokedAt !== null && key.revokedAt < key.expiresAt ? 'Was to expire' : 'Expired'} ${dateTime(key.expiresAt)}`
  return html`${expiresSoon(key, now) ? html`<strong class="expiry-warning">Expires soon:</strong> ` : ''}Expires ${when(key.expiresAt, now)}`
}

/** Links to another key of the account, by its label and prefix (a rolled key's successor has the same label). */
export function keyLink (id: string, key: ApiKeyRow | undefined): SafeHtml {
  return key === undefined
    ? html`<a href="/portal/keys/${id}"><code>${id}</code></a>`
    : html`<a href="/portal/keys/${id}">${key.label === null ? '' : html`${key.label} `}<code>${key.prefix}&hellip;</code></a>`
}

export function statusText (key: ApiKeyRow, now: number, successors: ReadonlyMap<string, ApiKeyRow>): SafeHtml {
  const ended = endOf(key)
  const rolled = key.rolledTo === null
    ? ''
    : html`${ended === undefined ? 'Rolled' : ', rolled'}: replaced by ${keyLink(key.rolledTo, successors.get(key.rolledTo))}`
  if (ended !== undefined) return html`${ended.how} ${dateTime(ended.at)}${rolled}`
  if (key.rolledTo !== null && key.expiresAt !== null) return html`<span class="rolled">${rolled}; stops working ${when(key.expiresAt, now)}</span>`
  return html`Active`
}

/** A key's mode in words: a test key reads and writes only the account's sandbox. */
export function modeText (key: ApiKeyRow): SafeHtml {
  return key.mode === 'test' ? html`<span class="mode-test">Test</span>` : html`Live`
}

export interface KeyTableContext {
  now: number
  /** Keys a rolled key may name as its successor. */
  successors: ReadonlyMap<string, ApiKeyRow>
}

function keyRow (key: ApiKeyRow, { now, successors }: KeyTableContext): SafeHtml {
  const name = keyName(key)
  const classes = [...(key.live ? [] : ['revoked']), ...(expiresSoon(key, now) ? ['expiring'] : [])]
  return html`<tr${classes.length === 0 ? '' : html` class="${classes.join(' ')}"`}>
  <td data-label="Label"><a href="/portal/keys/${key.id}" aria-label="Usage and details of the key ${name}">${key.label ?? html`<span class="muted">no label</span>`}</a></td>
  <td data-label="Prefix"><code>${key.prefix}&hellip;</code></td>
  <td data-label="Mode">${modeText(key)}</td>
  <td data-label="Scopes">${scopesList(key.scopes)}</td>
  <td data-label="Created">${dateTime(key.createdAt)}</td>
  <td data-label="Expiry">${expiryText(key, now)}</td>
  <td data-label="Last used">${key.lastUsedAt === null ? html`<span class="muted">never</span>` : dateTime(key.lastUsedAt)}</td>
  <td data-label="Status">${statusText(key, now, successors)}</td>
  <td data-label="">${key.live
    ? html`<span class="row-actions">${key.rolledTo === null ? html`<a href="/portal/keys/${key.id}/roll" aria-label="Roll the key ${name}">Roll&hellip;</a>` : ''}
    <a class="danger-link" href="/portal/keys/${key.id}/revoke" aria-label="Revoke the key ${name}">Revoke&hellip;</a></span>`
    : ''}</td>
</tr>`
}

export function keysTable (keys: readonly ApiKeyRow[], caption: string, context: KeyTableContext): SafeHtml {
  return html`<div class="table-scroll">
  <table class="keys">
    <caption class="visually-hidden">${caption}</caption>
    <thead><tr><th scope="col">Label</th><th scope="col">Prefix</th><th scope="col">Mode</th><th scope="col">Scopes</th><th scope="col">Created</th><th scope="col">Expiry</th><th scope="col">Last used</th><th scope="col">Status</th><th scope="col"><span class="visually-hidden">Actions</span></th></tr></thead>
    <tbody>
    ${keys.map((key) => keyRow(key, context))}
    </tbody>
  </table>
  </div>`
}
