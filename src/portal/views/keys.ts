import { html, type SafeHtml } from '../../core/html.js'
import { MAX_LABEL_LENGTH } from '../../core/accounts.js'
import { SCOPES, type KeyMode, type Scope } from '../../core/api-keys.js'
import { operationsAllowedBy } from '../../http/routes/pets.js'
import type { AccountRow, ApiKeyRow } from '../../storage/store.js'
import { DEFAULT_EXPIRY_CHOICE, EXPIRY_CHOICES } from '../choices.js'
import { expiresSoon, keyName, keysTable, scopesList, when, type KeyTableContext } from './key-table.js'
import { csrfField, describedBy, formMessage, page, type AssetUrls } from './layout.js'
import { verifyFirstSection } from './mail-links.js'

/** What each scope is for, in words; the operations it allows are read from the routes. */
const SCOPE_PURPOSES: Readonly<Record<Scope, string>> = {
  'animals:read': 'list and read animals',
  'animals:write': 'add animals'
}

/** What the key form says each scope allows, naming the operations whose x-required-scopes is that scope. */
export const SCOPE_WORDS: Readonly<Record<Scope, string>> = Object.fromEntries(SCOPES.map((scope) =>
  [scope, `${SCOPE_PURPOSES[scope]} (${operationsAllowedBy(scope).join(', ')})`])) as Record<Scope, string>

/** What the create form shows chosen: what was sent back after an error, both scopes and no expiry at first. */
export interface KeyFormState {
  scopes: readonly string[]
  expiresIn: string
  mode?: KeyMode
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
  /** SANDBOX_MAX_PETS. */
  sandboxMaxPets: number
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

const figureOf = (count: number): string => count.toLocaleString('en-US')

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
    ${row.mode === 'test' ? html`<dt>Mode</dt><dd>Test: it reads and writes only your test data</dd>` : ''}
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
    <fieldset class="choices" aria-describedby="mode-hint">
      <legend>Mode</legend>
      <p class="hint" id="mode-hint">A test key (<code>ask_test_&hellip;</code>) calls the same API at the same address, but reads and writes only your test data:
      a catalogue of your own, seeded with demo animals, that you can reset at any time. Live data never sees it.</p>
      <div class="choice"><input type="radio" id="mode-live" name="mode" value="live"${form?.mode === 'test' ? '' : html` checked`}>
      <label for="mode-live">Live: the real catalogue</label></div>
      <div class="choice"><input type="radio" id="mode-test" name="mode" value="test"${form?.mode === 'test' ? html` checked` : ''}>
      <label for="mode-test">Test: your test data only (the staging environment)</label></div>
    </fieldset>
    <label for="expires_in">Expires</label>
    <select id="expires_in" name="expires_in" aria-describedby="expiry-hint">
      ${EXPIRY_CHOICES.map(({ value, text }) => html`<option value="${value}"${value === expiresIn ? html` selected` : ''}>${text}</option>`)}
    </select>
    <p class="hint" id="expiry-hint">From then on the API refuses the key. A key that expires limits what a forgotten copy can do; roll it before it expires.</p>
    <button type="submit">Generate key</button>
  </form>`
}

export function keysPage ({ assets, session, live, revoked, revokedTotal, apiBaseUrl, sandboxMaxPets, created, error, notice, label, form, now = Date.now() }: KeysPageOptions): string {
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
<section aria-labelledby="test-data-heading">
  <h2 id="test-data-heading">Test data</h2>
  <p>Test keys read and write your sandbox: a catalogue of your own that starts with 20 demo animals and holds at most ${figureOf(sandboxMaxPets)}.
  Resetting it deletes every animal your test keys added and restores the demo animals. Live data is never touched.</p>
  <p><a class="danger-link" href="/portal/sandbox/reset">Reset test data&hellip;</a></p>
</section>
${session.account.emailVerifiedAt === null
  ? verifyFirstSection(session.account, session.csrfToken)
  : html`<section aria-labelledby="generate-heading">
  <h2 id="generate-heading">Generate a key</h2>
  ${createForm(session.csrfToken, label, form, error)}
</section>`}
<section aria-labelledby="first-request-heading">
  <h2 id="first-request-heading">Your first request</h2>
  <p>List the first animals of the catalogue${created === undefined ? ' (put one of your keys in the first line)' : ' with your new key'}:</p>
  <pre class="snippet"><code id="snippet">${snippet(apiBaseUrl, created?.key)}</code></pre>
  <button type="button" class="copy" data-copy="snippet" data-status="snippet-status" hidden>Copy snippet</button>
  <p class="copy-status" id="snippet-status" role="status"></p>
  <p id="test-mode-note">With a test key (<code>ask_test_&hellip;</code>) the same request, at the same address, lists your test data instead:
  the same paths, errors and headers, and data kept apart from the live catalogue. Use one while you build and test your program; switch to a live key to go live.</p>
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
