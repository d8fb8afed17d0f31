import { html } from '../../core/html.js'
import type { AccountRow } from '../../storage/store.js'
import { page, type AssetUrls } from './layout.js'

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
