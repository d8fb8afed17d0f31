import { html, type SafeHtml } from '../../core/html.js'
import type { AccountRow } from '../../storage/store.js'
import { CSRF_FIELD } from '../csrf.js'

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
    <a href="/portal/two-step">Two-step verification</a>
    <a href="/portal/sessions">Sessions</a>
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

export function csrfField (token: string): SafeHtml {
  return html`<input type="hidden" name="${CSRF_FIELD}" value="${token}">`
}

/** A message about the form as a whole: announced by screen readers, tied to the fields by aria-describedby. */
export function formMessage (error: string | undefined, notice: string | undefined): SafeHtml {
  return html`${error === undefined ? '' : html`<p class="message error" id="form-error" role="alert">${error}</p>`}${notice === undefined ? '' : html`<p class="message notice" role="status">${notice}</p>`}`
}

export const describedBy = (error: string | undefined, ...ids: string[]): string =>
  [...(error === undefined ? [] : ['form-error']), ...ids].join(' ')
