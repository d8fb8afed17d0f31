import { html, type SafeHtml } from '../core/html.js'
import { MIN_PASSWORD_LENGTH } from '../core/passwords.js'
import { MAX_LABEL_LENGTH } from '../core/accounts.js'
import { KEY_ID_PATTERN, SCOPES, type Scope } from '../core/api-keys.js'
import type { AccountRow, ApiKeyRow, AuditActor, AuditEvent, AuditEventType, UsageOutcome } from '../storage/store.js'
import { DEFAULT_EXPIRY_CHOICE, DEFAULT_GRACE_CHOICE, EXPIRY_CHOICES, GRACE_CHOICES } from './choices.js'
import { CSRF_FIELD } from './csrf.js'
import { OUTCOME_WORDS, OUTCOMES, usageChart, usageLegend, type KeyUsageSummary } from './usage-chart.js'

/** URLs of the stylesheet, the script and the icon, each with a digest of its content so caches never serve an old one. */
export interface AssetUrls {
  css: string
  script: string
  icon: string
}

interface PageOptions {
  title: string
  assets: AssetUrls
  main: SafeHtml
  /** Shown in the header with a log-out button. */
  session?: { account: AccountRow, csrfToken: string } | undefined
  /** Pages with a copy button load the portal's only script. */
  script?: boolean
}

export function page ({ title, assets, main, session, script = false }: PageOptions): string {
  return html`<!doctype html>
<html lang="en">
<head>
<meta charset="utf-8">
<meta name="viewport" content="width=device-width, initial-scale=1">
<title>${title} &middot; Animal Store developer portal</title>
<link rel="stylesheet" href="${assets.css}">
<link rel="icon" href="${assets.icon}" type="image/svg+xml">
${script ? html`<script src="${assets.script}" defer></script>` : ''}
</head>
<body>
<a class="skip-link" href="#main">Skip to content</a>
<header class="site-header">
  <a class="brand" href="/portal">Animal Store <span>developer portal</span></a>
  <nav aria-label="Portal">
    <a href="/docs">API reference</a>
    ${session === undefined
      ? ''
      : html`<a href="/portal/keys">Keys</a>
    <a href="/portal/events">Events</a>
    <span class="who">${session.account.email}</span>
    <form class="inline" method="post" action="/portal/logout">
      ${csrfField(session.csrfToken)}
      <button class="link-button" type="submit">Log out</button>
    </form>`}
  </nav>
</header>
<main id="main">
${main}
</main>
</body>
</html>
`.toString()
}

function csrfField (token: string): SafeHtml {
  return html`<input type="hidden" name="${CSRF_FIELD}" value="${token}">`
}

/** A message about the form as a whole: announced by screen readers, tied to the fields by aria-describedby. */
function formMessage (error: string | undefined, notice: string | undefined): SafeHtml {
  return html`${error === undefined ? '' : html`<p class="message error" id="form-error" role="alert">${error}</p>`}${notice === undefined ? '' : html`<p class="message notice" role="status">${notice}</p>`}`
}

const describedBy = (error: string | undefined, ...ids: string[]): string =>
  [...(error === undefined ? [] : ['form-error']), ...ids].join(' ')

export interface CredentialsFormOptions {
  assets: AssetUrls
  csrfToken: string
  email?: string | undefined
  error?: string | undefined
  notice?: string | undefined
}

export function logInPage ({ assets, csrfToken, email, error, notice }: CredentialsFormOptions): string {
  return page({
    title: 'Log in',
    assets,
    main: html`<h1>Log in</h1>
<p class="lead">Manage the API keys of your Animal Store account.</p>
${formMessage(error, notice)}
<form class="stack" method="post" action="/portal/login">
  ${csrfField(csrfToken)}
  <label for="email">Email</label>
  <input id="email" name="email" type="email" autocomplete="username" required value="${email ?? ''}"${error === undefined ? '' : html` aria-describedby="form-error"`}>
  <label for="password">Password</label>
  <input id="password" name="password" type="password" autocomplete="current-password" required${error === undefined ? '' : html` aria-describedby="form-error"`}>
  <button type="submit">Log in</button>
</form>
<p>No account yet? <a href="/portal/signup">Sign up</a>.</p>
<p class="hint">Account created by an operator with the <code>animal-store</code> command? Ask them to set a password for it with
<code>animal-store accounts set-password --email you@example.com</code>.</p>`
  })
}

export function signUpPage ({ assets, csrfToken, email, error }: CredentialsFormOptions): string {
  return page({
    title: 'Sign up',
    assets,
    main: html`<h1>Sign up</h1>
<p class="lead">Create an account, then generate an API key to call the Animal Store API.</p>
${formMessage(error, undefined)}
<form class="stack" method="post" action="/portal/signup">
  ${csrfField(csrfToken)}
  <label for="email">Email</label>
  <input id="email" name="email" type="email" autocomplete="email" required value="${email ?? ''}"${error === undefined ? '' : html` aria-describedby="form-error"`}>
  <label for="password">Password</label>
  <input id="password" name="password" type="password" autocomplete="new-password" required minlength="${MIN_PASSWORD_LENGTH}" aria-describedby="${describedBy(error, 'password-hint')}">
  <p class="hint" id="password-hint">At least ${MIN_PASSWORD_LENGTH} characters. A few unrelated words make a password that is long, memorable and hard to guess.</p>
  <button type="submit">Create account</button>
</form>
<p>Already have an account? <a href="/portal/login">Log in</a>.</p>`
  })
}

/** A date and its time of day (to the minute or the second), each kept whole by portal.css: a narrow column breaks between them only. */
const stamp = (date: Date, end: 16 | 19): SafeHtml => {
  const iso = date.toISOString()
  return html`<time datetime="${iso}"><span>${iso.slice(0, 10)}</span> <span>${iso.slice(11, end)} UTC</span></time>`
}

const dateTime = (date: Date): SafeHtml => stamp(date, 16)

const seconds = (date: Date): SafeHtml => stamp(date, 19)

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
function when (at: Date, now: number): SafeHtml {
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

const keyName = (key: Pick<ApiKeyRow, 'label' | 'prefix'>): string => key.label ?? key.prefix

function scopesList (scopes: readonly string[]): SafeHtml {
  return scopes.length === 0
    ? html`<span class="muted">none</span>`
    : html`<span class="scopes">${scopes.map((scope, index) => html`${index === 0 ? '' : ' '}<code>${scope}</code>`)}</span>`
}

function expiryText (key: ApiKeyRow, now: number): SafeHtml {
  if (key.expiresAt === null) return html`<span class="muted">Never</span>`
  if (!key.live) return html`${key.revokedAt !== null && key.revokedAt < key.expiresAt ? 'Was to expire' : 'Expired'} ${dateTime(key.expiresAt)}`
  return html`${expiresSoon(key, now) ? html`<strong class="expiry-warning">Expires soon:</strong> ` : ''}Expires ${when(key.expiresAt, now)}`
}

/** Links to another key of the account, by its label and prefix (a rolled key's successor has the same label). */
function keyLink (id: string, key: ApiKeyRow | undefined): SafeHtml {
  return key === undefined
    ? html`<a href="/portal/keys/${id}"><code>${id}</code></a>`
    : html`<a href="/portal/keys/${id}">${key.label === null ? '' : html`${key.label} `}<code>${key.prefix}&hellip;</code></a>`
}

function statusText (key: ApiKeyRow, now: number, successors: ReadonlyMap<string, ApiKeyRow>): SafeHtml {
  const ended = endOf(key)
  const rolled = key.rolledTo === null
    ? ''
    : html`${ended === undefined ? 'Rolled' : ', rolled'}: replaced by ${keyLink(key.rolledTo, successors.get(key.rolledTo))}`
  if (ended !== undefined) return html`${ended.how} ${dateTime(ended.at)}${rolled}`
  if (key.rolledTo !== null && key.expiresAt !== null) return html`<span class="rolled">${rolled}; stops working ${when(key.expiresAt, now)}</span>`
  return html`Active`
}

interface KeyTableContext {
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

function keysTable (keys: readonly ApiKeyRow[], caption: string, context: KeyTableContext): SafeHtml {
  return html`<div class="table-scroll">
  <table class="keys">
    <caption class="visually-hidden">${caption}</caption>
    <thead><tr><th scope="col">Label</th><th scope="col">Prefix</th><th scope="col">Scopes</th><th scope="col">Created</th><th scope="col">Expiry</th><th scope="col">Last used</th><th scope="col">Status</th><th scope="col"><span class="visually-hidden">Actions</span></th></tr></thead>
    <tbody>
    ${keys.map((key) => keyRow(key, context))}
    </tbody>
  </table>
  </div>`
}

/** What the key form says each scope allows, naming the operations whose x-required-scopes is that scope. */
export const SCOPE_WORDS: Readonly<Record<Scope, string>> = {
  'animals:read': 'list and read animals (listPets, getPet)',
  'animals:write': 'add animals (createPet)'
}

/** What the create form shows chosen: what was sent back after an error, both scopes and no expiry at first. */
export interface KeyFormState {
  scopes: readonly string[]
  expiresIn: string
}

export interface KeysPageOptions {
  assets: AssetUrls
  session: { account: AccountRow, csrfToken: string }
  /** Every live key of the account (at most the cap), oldest first. */
  live: readonly ApiKeyRow[]
  /** The most recently ended (revoked or expired) keys… */
  revoked: readonly ApiKeyRow[]
  /** …of this many in all. */
  revokedTotal: number
  /** Base URL of the API for the snippet, ending in /v1. */
  apiBaseUrl: string
  /** A key just generated, or just made by rolling `replaces`: the only time its secret is shown. */
  created?: { key: string, row: ApiKeyRow, replaces?: ApiKeyRow | undefined } | undefined
  error?: string | undefined
  notice?: string | undefined
  label?: string | undefined
  form?: KeyFormState | undefined
  now?: number
}

function snippet (apiBaseUrl: string, key: string | undefined): string {
  return `export ANIMAL_STORE_KEY='${key ?? 'paste-your-key-here'}'\n` +
    `curl -s "${apiBaseUrl}/pets?limit=5" -H "Authorization: Bearer $ANIMAL_STORE_KEY"`
}

function newKeySection (created: { key: string, row: ApiKeyRow, replaces?: ApiKeyRow | undefined }, now: number): SafeHtml {
  const { row, replaces } = created
  return html`<section class="new-key" aria-labelledby="new-key-heading">
  <h2 id="new-key-heading">Your new key${row.label === null ? '' : html` &ldquo;${row.label}&rdquo;`}</h2>
  <p class="warning"><strong>Copy this key now: it will not be shown again.</strong> Only a digest of it is stored, so nobody can show it to you later.
  If you lose it, generate a new key and revoke this one. Keep it out of source code and chats.</p>
  <div class="secret">
    <code id="new-key-value">${created.key}</code>
    <button type="button" class="copy" data-copy="new-key-value" data-status="new-key-status" hidden>Copy key</button>
  </div>
  <p class="copy-status" id="new-key-status" role="status"></p>
  <dl class="terms" id="new-key-terms">
    <dt>Scopes</dt><dd>${scopesList(row.scopes)}</dd>
    <dt>Expiry</dt><dd>${row.expiresAt === null ? 'Never expires' : html`Expires ${when(row.expiresAt, now)}`}</dd>
    ${replaces === undefined
      ? ''
      : html`<dt>Replaces</dt><dd><code>${replaces.prefix}&hellip;</code>, which ${replaces.live && replaces.expiresAt !== null
        ? html`keeps working until ${when(replaces.expiresAt, now)}`
        : 'has stopped working'}</dd>`}
  </dl>
</section>`
}

function createForm (csrfToken: string, label: string | undefined, form: KeyFormState | undefined, error: string | undefined): SafeHtml {
  const chosen = new Set(form?.scopes ?? SCOPES)
  const expiresIn = form?.expiresIn ?? DEFAULT_EXPIRY_CHOICE
  return html`<form class="stack" method="post" action="/portal/keys">
    ${csrfField(csrfToken)}
    <label for="label">Label</label>
    <input id="label" name="label" type="text" maxlength="${MAX_LABEL_LENGTH}" value="${label ?? ''}" aria-describedby="label-hint">
    <p class="hint" id="label-hint">Where the key will be used, such as &ldquo;laptop&rdquo; or &ldquo;billing service&rdquo;. Optional.</p>
    <fieldset class="choices" aria-describedby="${describedBy(error, 'scopes-hint')}">
      <legend>Scopes</legend>
      <p class="hint" id="scopes-hint">What the key may do: choose at least one. A key that only reads cannot add animals even if it leaks.</p>
      ${SCOPES.map((scope) => html`<div class="choice"><input type="checkbox" id="scope-${scope.replace(':', '-')}" name="scopes" value="${scope}"${chosen.has(scope) ? html` checked` : ''}>
      <label for="scope-${scope.replace(':', '-')}"><code>${scope}</code>: ${SCOPE_WORDS[scope]}</label></div>`)}
    </fieldset>
    <label for="expires_in">Expires</label>
    <select id="expires_in" name="expires_in" aria-describedby="expiry-hint">
      ${EXPIRY_CHOICES.map(({ value, text }) => html`<option value="${value}"${value === expiresIn ? html` selected` : ''}>${text}</option>`)}
    </select>
    <p class="hint" id="expiry-hint">From then on the API refuses the key. A key that expires limits what a forgotten copy can do; roll it before it expires.</p>
    <button type="submit">Generate key</button>
  </form>`
}

export function keysPage ({ assets, session, live, revoked, revokedTotal, apiBaseUrl, created, error, notice, label, form, now = Date.now() }: KeysPageOptions): string {
  const context: KeyTableContext = { now, successors: new Map([...live, ...revoked].map((key) => [key.id, key])) }
  const expiring = live.filter((key) => expiresSoon(key, now))
  return page({
    title: 'API keys',
    assets,
    session,
    script: true,
    main: html`<h1>API keys</h1>
${formMessage(error, notice)}
${created === undefined ? '' : newKeySection(created, now)}
${expiring.length === 0
  ? ''
  : html`<p class="message warning" id="expiry-warning">${expiring.length === 1 ? html`The key &ldquo;${keyName(expiring[0] as ApiKeyRow)}&rdquo; expires` : html`${expiring.length} of your keys expire`}
  within 7 days. Roll ${expiring.length === 1 ? 'it' : 'them'} to get a replacement with the same label and scopes, then move your programs to it.</p>`}
<section aria-labelledby="keys-heading">
  <h2 id="keys-heading">Your keys</h2>
  ${live.length === 0 && revokedTotal === 0
    ? html`<p>You have no keys yet. Generate one below.</p>`
    : html`<p>${live.length} active, ${revokedTotal} revoked or expired. Last use is recorded to the minute; each key's page has its usage.</p>
  ${live.length === 0 ? html`<p>You have no active key. Generate one below.</p>` : keysTable(live, 'Active keys', context)}`}
  <p><a href="/portal/events">Events on your account</a>: log-ins, keys created, rolled, revoked or refused.</p>
</section>
${revokedTotal === 0
  ? ''
  : html`<section aria-labelledby="revoked-heading">
  <h2 id="revoked-heading">Recently revoked or expired</h2>
  ${keysTable(revoked, 'Recently revoked or expired keys', context)}
  ${revokedTotal > revoked.length ? html`<p><a href="/portal/keys/revoked?page=1">All ${revokedTotal} revoked or expired keys</a></p>` : ''}
</section>`}
<section aria-labelledby="generate-heading">
  <h2 id="generate-heading">Generate a key</h2>
  ${createForm(session.csrfToken, label, form, error)}
</section>
<section aria-labelledby="first-request-heading">
  <h2 id="first-request-heading">Your first request</h2>
  <p>List the first animals of the catalogue${created === undefined ? ' (put one of your keys in the first line)' : ' with your new key'}:</p>
  <pre class="snippet"><code id="snippet">${snippet(apiBaseUrl, created?.key)}</code></pre>
  <button type="button" class="copy" data-copy="snippet" data-status="snippet-status" hidden>Copy snippet</button>
  <p class="copy-status" id="snippet-status" role="status"></p>
  <p>Every operation, parameter and error is described in the <a href="/docs">API reference</a>
  (and in the OpenAPI document at <a href="/v1/openapi.json"><code>/v1/openapi.json</code></a>).</p>
</section>`
  })
}

export function revokedKeysPage ({ assets, session, keys, total, page: number, pages, now = Date.now() }: { assets: AssetUrls, session: { account: AccountRow, csrfToken: string }, keys: readonly ApiKeyRow[], total: number, page: number, pages: number, now?: number }): string {
  return page({
    title: 'Revoked and expired keys',
    assets,
    session,
    main: html`<h1>Revoked and expired keys</h1>
<p>${total} revoked or expired key${total === 1 ? '' : 's'}, the most recently ended first. Page ${number} of ${pages}.</p>
${keys.length === 0 ? '' : keysTable(keys, 'Revoked and expired keys', { now, successors: new Map() })}
<nav class="pages" aria-label="Pages of revoked and expired keys">
  ${number > 1 ? html`<a href="/portal/keys/revoked?page=${number - 1}" rel="prev">Newer</a>` : ''}
  ${number < pages ? html`<a href="/portal/keys/revoked?page=${number + 1}" rel="next">Older</a>` : ''}
  <a href="/portal/keys">Back to your keys</a>
</nav>`
  })
}

export function revokePage ({ assets, session, key }: { assets: AssetUrls, session: { account: AccountRow, csrfToken: string }, key: ApiKeyRow }): string {
  const name = key.label ?? 'without a label'
  return page({
    title: 'Revoke a key',
    assets,
    session,
    main: html`<h1>Revoke the key &ldquo;${name}&rdquo;?</h1>
<p>The key <code>${key.prefix}&hellip;</code>, created ${dateTime(key.createdAt)}, will stop working within a second, on every server.
Programs that use it will get <code>401 Unauthorized</code>. This cannot be undone.</p>
<form class="actions" method="post" action="/portal/keys/${key.id}/revoke">
  ${csrfField(session.csrfToken)}
  <button class="danger" type="submit">Revoke key</button>
  <a href="/portal/keys">Cancel</a>
</form>`
  })
}

export function errorPage ({ assets, status, title, message, session }: { assets: AssetUrls, status: number, title: string, message: string, session?: { account: AccountRow, csrfToken: string } | undefined }): string {
  return page({
    title,
    assets,
    session,
    main: html`<h1>${title}</h1>
<p class="message error" role="alert">${message}</p>
<p><a href="${session === undefined ? '/portal/login' : '/portal/keys'}">${session === undefined ? 'Go to the log-in page' : 'Back to your keys'}</a></p>
<p class="hint">Status ${status}.</p>`
  })
}

export interface RollPageOptions {
  assets: AssetUrls
  session: { account: AccountRow, csrfToken: string }
  key: ApiKeyRow
  error?: string | undefined
  grace?: string | undefined
  now?: number
}

export function rollPage ({ assets, session, key, error, grace = DEFAULT_GRACE_CHOICE, now = Date.now() }: RollPageOptions): string {
  const name = key.label ?? 'without a label'
  const lifetime = key.expiresAt === null ? undefined : key.expiresAt.getTime() - key.createdAt.getTime()
  return page({
    title: 'Roll a key',
    assets,
    session,
    main: html`<h1>Roll the key &ldquo;${name}&rdquo;?</h1>
${formMessage(error, undefined)}
<p>Rolling makes a <strong>new key with the same label and scopes</strong> (${scopesList(key.scopes)})${lifetime === undefined
  ? ', without an expiry'
  : html`, which expires as long after its creation as this one does (${relativeTime(new Date(now + lifetime), now).replace(/^in /, '')})`}.
Its secret is shown once, on the next page.</p>
<p>The old key <code>${key.prefix}&hellip;</code> keeps working for the grace period you choose, so that you can move your programs
to the new key without an outage; then the API refuses it. Until then it counts toward your limit of active keys.</p>
<form class="stack" method="post" action="/portal/keys/${key.id}/roll">
  ${csrfField(session.csrfToken)}
  <label for="grace">The old key keeps working for</label>
  <select id="grace" name="grace" aria-describedby="${describedBy(error, 'grace-hint')}">
    ${GRACE_CHOICES.map(({ value, text }) => html`<option value="${value}"${value === grace ? html` selected` : ''}>${text}</option>`)}
  </select>
  <p class="hint" id="grace-hint">${key.expiresAt === null ? '' : html`It stops at its own expiry, ${when(key.expiresAt, now)}, if that comes first. `}Choose &ldquo;None&rdquo; if the old key may have leaked.</p>
  <div class="actions">
    <button type="submit">Roll key</button>
    <a href="/portal/keys">Cancel</a>
  </div>
</form>`
  })
}

export interface KeyPageOptions {
  assets: AssetUrls
  session: { account: AccountRow, csrfToken: string }
  key: ApiKeyRow
  /** The key that replaced this one, when it was rolled and the successor is the account's. */
  successor?: ApiKeyRow | undefined
  usage: KeyUsageSummary
  now?: number
}

function outcomeCells (counts: Record<UsageOutcome, number> & { total: number }): SafeHtml {
  return html`${OUTCOMES.map((outcome) => html`<td class="number">${counts[outcome].toLocaleString('en-US')}</td>`)}<td class="number">${counts.total.toLocaleString('en-US')}</td>`
}

const outcomeHeads = html`${OUTCOMES.map((outcome) => html`<th scope="col" class="number">${outcome}</th>`)}<th scope="col" class="number">Total</th>`

export function keyPage ({ assets, session, key, successor, usage, now = Date.now() }: KeyPageOptions): string {
  const name = keyName(key)
  const days = usage.days.length
  return page({
    title: `Key ${name}`,
    assets,
    session,
    main: html`<h1>Key &ldquo;${name}&rdquo;</h1>
<dl class="terms">
  <dt>Prefix</dt><dd><code>${key.prefix}&hellip;</code></dd>
  <dt>Id</dt><dd><code>${key.id}</code></dd>
  <dt>Scopes</dt><dd>${scopesList(key.scopes)}</dd>
  <dt>Created</dt><dd>${dateTime(key.createdAt)}</dd>
  <dt>Expiry</dt><dd>${expiryText(key, now)}</dd>
  <dt>Last used</dt><dd>${key.lastUsedAt === null ? 'Never' : dateTime(key.lastUsedAt)}</dd>
  <dt>Status</dt><dd>${statusText(key, now, new Map(successor === undefined ? [] : [[successor.id, successor]]))}</dd>
</dl>
${key.live
  ? html`<p class="row-actions">${key.rolledTo === null ? html`<a href="/portal/keys/${key.id}/roll">Roll this key&hellip;</a>` : ''}
  <a class="danger-link" href="/portal/keys/${key.id}/revoke">Revoke this key&hellip;</a></p>`
  : ''}
<section aria-labelledby="usage-heading">
  <h2 id="usage-heading">Requests in the last ${days} days</h2>
  <p>${usage.byOutcome.total === 0
    ? `No requests with this key in the last ${days} days.`
    : `${usage.byOutcome.total.toLocaleString('en-US')} request${usage.byOutcome.total === 1 ? '' : 's'} in the last ${days} days.`}
  Days are UTC; counts reach this page within a minute of the requests.</p>
  <figure class="chart">
    ${usageChart(usage, { id: 'usage-chart', keyName: name })}
    <figcaption>${usageLegend()}</figcaption>
  </figure>
  <details>
    <summary>Requests per day, as a table</summary>
    <div class="table-scroll">
    <table class="numbers" id="usage-table">
      <caption class="visually-hidden">Requests per day with the key ${name}</caption>
      <thead><tr><th scope="col">Day (UTC)</th>${outcomeHeads}</tr></thead>
      <tbody>
      ${usage.days.map((day) => html`<tr><th scope="row"><time datetime="${day.day}">${day.day}</time></th>${outcomeCells(day)}</tr>`)}
      </tbody>
    </table>
    </div>
  </details>
  <h3>By outcome</h3>
  <div class="table-scroll">
  <table class="numbers" id="usage-by-outcome">
    <caption class="visually-hidden">Requests in the last ${days} days by outcome</caption>
    <thead><tr>${outcomeHeads}</tr></thead>
    <tbody><tr>${outcomeCells(usage.byOutcome)}</tr></tbody>
  </table>
  </div>
  <p class="hint">${OUTCOMES.map((outcome, index) => `${index === 0 ? '' : '; '}${outcome}: ${OUTCOME_WORDS[outcome].replace(/ \(.*\)$/, '')}`).join('')}.</p>
  <h3>By operation</h3>
  ${usage.byOperation.length === 0
    ? html`<p class="muted">No operation called.</p>`
    : html`<div class="table-scroll">
  <table class="numbers" id="usage-by-operation">
    <caption class="visually-hidden">Requests in the last ${days} days by operation</caption>
    <thead><tr><th scope="col">Operation</th>${outcomeHeads}</tr></thead>
    <tbody>
    ${usage.byOperation.map((operation) => html`<tr><th scope="row"><code>${operation.operation}</code></th>${outcomeCells(operation)}</tr>`)}
    </tbody>
  </table>
  </div>`}
</section>
<p><a href="/portal/keys">Back to your keys</a> &middot; <a href="/portal/events">Events on your account</a></p>`
  })
}

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
  scope_denied: 'Request refused: scope missing'
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
