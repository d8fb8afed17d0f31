import { html, type SafeHtml } from '../core/html.js'
import { MIN_PASSWORD_LENGTH } from '../core/passwords.js'
import { MAX_LABEL_LENGTH } from '../core/accounts.js'
import type { AccountRow, ApiKeyRow } from '../storage/store.js'
import { CSRF_FIELD } from './csrf.js'

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
      : html`<span class="who">${session.account.email}</span>
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

const dateTime = (date: Date): SafeHtml =>
  html`<time datetime="${date.toISOString()}">${date.toISOString().slice(0, 16).replace('T', ' ')} UTC</time>`

function keyRow (key: ApiKeyRow): SafeHtml {
  const name = key.label ?? key.prefix
  return html`<tr${key.live ? '' : html` class="revoked"`}>
  <td data-label="Label">${key.label ?? html`<span class="muted">no label</span>`}</td>
  <td data-label="Prefix"><code>${key.prefix}&hellip;</code></td>
  <td data-label="Created">${dateTime(key.createdAt)}</td>
  <td data-label="Last used">${key.lastUsedAt === null ? html`<span class="muted">never</span>` : dateTime(key.lastUsedAt)}</td>
  <td data-label="Status">${key.live ? 'Active' : key.revokedAt === null ? 'Ended' : html`Revoked ${dateTime(key.revokedAt)}`}</td>
  <td data-label="">${key.live
    ? html`<a class="danger-link" href="/portal/keys/${key.id}/revoke" aria-label="Revoke the key ${name}">Revoke&hellip;</a>`
    : ''}</td>
</tr>`
}

function keysTable (keys: readonly ApiKeyRow[], caption: string): SafeHtml {
  return html`<div class="table-scroll">
  <table class="keys">
    <caption class="visually-hidden">${caption}</caption>
    <thead><tr><th scope="col">Label</th><th scope="col">Prefix</th><th scope="col">Created</th><th scope="col">Last used</th><th scope="col">Status</th><th scope="col"><span class="visually-hidden">Actions</span></th></tr></thead>
    <tbody>
    ${keys.map(keyRow)}
    </tbody>
  </table>
  </div>`
}

export interface KeysPageOptions {
  assets: AssetUrls
  session: { account: AccountRow, csrfToken: string }
  /** Every live key of the account (at most the cap), oldest first. */
  live: readonly ApiKeyRow[]
  /** The most recently revoked keys… */
  revoked: readonly ApiKeyRow[]
  /** …of this many in all. */
  revokedTotal: number
  /** Base URL of the API for the snippet, ending in /v1. */
  apiBaseUrl: string
  /** A key just generated: the only time its secret is shown. */
  created?: { key: string, row: ApiKeyRow } | undefined
  error?: string | undefined
  notice?: string | undefined
  label?: string | undefined
}

function snippet (apiBaseUrl: string, key: string | undefined): string {
  return `export ANIMAL_STORE_KEY='${key ?? 'paste-your-key-here'}'\n` +
    `curl -s "${apiBaseUrl}/pets?limit=5" -H "Authorization: Bearer $ANIMAL_STORE_KEY"`
}

export function keysPage ({ assets, session, live, revoked, revokedTotal, apiBaseUrl, created, error, notice, label }: KeysPageOptions): string {
  return page({
    title: 'API keys',
    assets,
    session,
    script: true,
    main: html`<h1>API keys</h1>
${formMessage(error, notice)}
${created === undefined
  ? ''
  : html`<section class="new-key" aria-labelledby="new-key-heading">
  <h2 id="new-key-heading">Your new key${created.row.label === null ? '' : html` &ldquo;${created.row.label}&rdquo;`}</h2>
  <p class="warning"><strong>Copy this key now: it will not be shown again.</strong> Only a digest of it is stored, so nobody can show it to you later.
  If you lose it, generate a new key and revoke this one. Keep it out of source code and chats.</p>
  <div class="secret">
    <code id="new-key-value">${created.key}</code>
    <button type="button" class="copy" data-copy="new-key-value" data-status="new-key-status" hidden>Copy key</button>
  </div>
  <p class="copy-status" id="new-key-status" role="status"></p>
</section>`}
<section aria-labelledby="keys-heading">
  <h2 id="keys-heading">Your keys</h2>
  ${live.length === 0 && revokedTotal === 0
    ? html`<p>You have no keys yet. Generate one below.</p>`
    : html`<p>${live.length} active, ${revokedTotal} revoked. Last use is recorded to the minute.</p>
  ${live.length === 0 ? html`<p>You have no active key. Generate one below.</p>` : keysTable(live, 'Active keys')}`}
</section>
${revokedTotal === 0
  ? ''
  : html`<section aria-labelledby="revoked-heading">
  <h2 id="revoked-heading">Recently revoked</h2>
  ${keysTable(revoked, 'Recently revoked keys')}
  ${revokedTotal > revoked.length ? html`<p><a href="/portal/keys/revoked?page=1">All ${revokedTotal} revoked keys</a></p>` : ''}
</section>`}
<section aria-labelledby="generate-heading">
  <h2 id="generate-heading">Generate a key</h2>
  <form class="stack" method="post" action="/portal/keys">
    ${csrfField(session.csrfToken)}
    <label for="label">Label</label>
    <input id="label" name="label" type="text" maxlength="${MAX_LABEL_LENGTH}" value="${label ?? ''}" aria-describedby="label-hint">
    <p class="hint" id="label-hint">Where the key will be used, such as &ldquo;laptop&rdquo; or &ldquo;billing service&rdquo;. Optional.</p>
    <button type="submit">Generate key</button>
  </form>
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

export function revokedKeysPage ({ assets, session, keys, total, page: number, pages }: { assets: AssetUrls, session: { account: AccountRow, csrfToken: string }, keys: readonly ApiKeyRow[], total: number, page: number, pages: number }): string {
  return page({
    title: 'Revoked keys',
    assets,
    session,
    main: html`<h1>Revoked keys</h1>
<p>${total} revoked key${total === 1 ? '' : 's'}, the most recently revoked first. Page ${number} of ${pages}.</p>
${keys.length === 0 ? '' : keysTable(keys, 'Revoked keys')}
<nav class="pages" aria-label="Pages of revoked keys">
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
