import { html } from '../../core/html.js'
import type { AccountRow, ApiKeyRow } from '../../storage/store.js'
import { DEFAULT_GRACE_CHOICE, GRACE_CHOICES } from '../choices.js'
import { dateTime, relativeTime, scopesList, when } from './key-table.js'
import { csrfField, describedBy, formMessage, page, type AssetUrls } from './layout.js'

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
  <label for="mode">The new key is</label>
  <select id="mode" name="mode">
    <option value="live"${key.mode === 'live' ? html` selected` : ''}>Live: the real catalogue</option>
    <option value="test"${key.mode === 'test' ? html` selected` : ''}>Test: your test data only</option>
  </select>
  <p class="hint" id="grace-hint">${key.expiresAt === null ? '' : html`It stops at its own expiry, ${when(key.expiresAt, now)}, if that comes first. `}Choose &ldquo;None&rdquo; if the old key may have leaked.</p>
  <div class="actions">
    <button type="submit">Roll key</button>
    <a href="/portal/keys">Cancel</a>
  </div>
</form>`
  })
}

/** The confirmation of a reset of the account's test data (test mode). */
export function sandboxResetPage ({ assets, session }: { assets: AssetUrls, session: { account: AccountRow, csrfToken: string } }): string {
  return page({
    title: 'Reset test data',
    assets,
    session,
    main: html`<h1>Reset your test data?</h1>
<p>Every animal your test keys added is deleted, and your sandbox holds the 20 demo animals again, with ids from 1.
Every server shows it within a second. Your test keys keep working; your live data is not touched. This cannot be undone.</p>
<form class="actions" method="post" action="/portal/sandbox/reset">
  ${csrfField(session.csrfToken)}
  <button class="danger" type="submit">Reset test data</button>
  <a href="/portal/keys">Cancel</a>
</form>`
  })
}
