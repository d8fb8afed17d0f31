import { html } from '../../core/html.js'
import { sessionHandle } from '../../core/sessions.js'
import { browserSummary } from '../../core/user-agent.js'
import type { AccountRow, AccountSessionRow } from '../../storage/store.js'
import { when } from './key-table.js'
import { csrfField, formMessage, page, type AssetUrls } from './layout.js'

export interface SessionsPageOptions {
  assets: AssetUrls
  session: { account: AccountRow, csrfToken: string, tokenHash: string }
  sessions: readonly AccountSessionRow[]
  notice?: string | undefined
  now?: number
}

/** The account's live sessions, each with a sign-out button, and "Sign out everywhere". */
export function sessionsPage ({ assets, session, sessions, notice, now = Date.now() }: SessionsPageOptions): string {
  const rows = sessions.map((row) => {
    const current = row.tokenHash === session.tokenHash
    return html`<tr${current ? html` class="current"` : ''}>
      <td data-label="Browser">${browserSummary(row.userAgent)}${current ? html` <strong>(this session)</strong>` : ''}</td>
      <td data-label="Address">${row.clientAddress ?? html`<span class="muted">unknown</span>`}</td>
      <td data-label="Started">${when(row.createdAt, now)}</td>
      <td data-label="Last seen">${row.lastSeenAt === null ? html`<span class="muted">unknown</span>` : when(row.lastSeenAt, now)}</td>
      <td><form class="inline" method="post" action="/portal/sessions/end">
        ${csrfField(session.csrfToken)}
        <input type="hidden" name="session" value="${sessionHandle(row.tokenHash)}">
        <button class="link-button danger-link" type="submit">Sign out</button>
      </form></td>
    </tr>`
  })
  return page({
    title: 'Sessions',
    assets,
    session,
    main: html`<h1>Sessions</h1>
<p class="lead">Where your account is logged in to the portal. Sign out any session you do not recognise, then change your password.</p>
${formMessage(undefined, notice)}
<div class="table-scroll">
  <table class="keys sessions">
    <caption class="visually-hidden">Your sessions, most recently started first</caption>
    <thead><tr><th scope="col">Browser</th><th scope="col">Address</th><th scope="col">Started</th><th scope="col">Last seen</th><th scope="col"><span class="visually-hidden">Actions</span></th></tr></thead>
    <tbody>
    ${rows}
    </tbody>
  </table>
</div>
<form class="stack" method="post" action="/portal/sessions/end-all">
  ${csrfField(session.csrfToken)}
  <button class="danger" type="submit">Sign out everywhere</button>
  <p class="hint">Ends every session of your account, this one included.</p>
</form>`
  })
}
