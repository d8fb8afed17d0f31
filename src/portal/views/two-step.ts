import { html, SafeHtml } from '../../core/html.js'
import { groupedSecret, TWO_STEP } from '../../core/two-step.js'
import type { AccountRow } from '../../storage/store.js'
import { when } from './key-table.js'
import { csrfField, formMessage, page, type AssetUrls } from './layout.js'

interface SignedIn {
  assets: AssetUrls
  session: { account: AccountRow, csrfToken: string }
  error?: string | undefined
  notice?: string | undefined
}

/** The one-line code field of every form here: digits from an app, or a recovery code. */
function codeField (label: string, error: string | undefined, hint: string): SafeHtml {
  return html`<label for="code">${label}</label>
  <input id="code" name="code" type="text" inputmode="text" autocomplete="one-time-code" autocapitalize="off" spellcheck="false" required maxlength="${TWO_STEP.maxCodeInput}" aria-describedby="${error === undefined ? 'code-hint' : 'form-error code-hint'}">
  <p class="hint" id="code-hint">${hint}</p>`
}

/** Two-step verification as it stands: on (with a form to turn it off) or off (with a button to set it up). */
export function twoStepPage ({ assets, session, error, notice, on, recoveryCodesLeft, now = Date.now() }: SignedIn & { on: Date | undefined, recoveryCodesLeft: number, now?: number }): string {
  const main = on === undefined
    ? html`<p id="two-step-state">Two-step verification is <strong>off</strong>: your password alone logs in to this account.</p>
<p>Turn it on, and logging in will also ask for a six-digit code from an authenticator app on your phone (any app that reads a QR code for
time-based one-time passwords, RFC 6238). A stolen password then opens nothing.</p>
<form class="stack" method="post" action="/portal/two-step/setup">
  ${csrfField(session.csrfToken)}
  <button type="submit">Set up two-step verification</button>
</form>`
    : html`<p id="two-step-state">Two-step verification is <strong>on</strong> since ${when(on, now)}. You have ${recoveryCodesLeft} unused recovery code${recoveryCodesLeft === 1 ? '' : 's'}.</p>
<h2>Turn it off</h2>
<form class="stack" method="post" action="/portal/two-step/disable">
  ${csrfField(session.csrfToken)}
  ${codeField('Current code', error, 'A code from your authenticator app, or one of your recovery codes.')}
  <button class="danger" type="submit">Turn off two-step verification</button>
</form>`
  return page({ title: 'Two-step verification', assets, session, main: html`<h1>Two-step verification</h1>\n${formMessage(error, notice)}\n${main}` })
}

/** The setup: the QR code (inline SVG, no script or style), the secret as text, and the form for the first code. */
export function setupPage ({ assets, session, error, secret, qrSvg }: SignedIn & { secret: string, qrSvg: string }): string {
  return page({
    title: 'Set up two-step verification',
    assets,
    session,
    main: html`<h1>Set up two-step verification</h1>
${formMessage(error, undefined)}
<ol>
  <li>Scan this QR code with your authenticator app.
    <figure class="qr-code" role="img" aria-label="QR code of your two-step verification secret">${new SafeHtml(qrSvg)}</figure>
  </li>
  <li>Or type this secret into the app (time-based, six digits, every 30 seconds):
    <div class="secret"><code id="totp-secret">${groupedSecret(secret)}</code></div>
  </li>
  <li>Type the code the app shows now, to confirm.</li>
</ol>
<form class="stack" method="post" action="/portal/two-step/confirm">
  ${csrfField(session.csrfToken)}
  ${codeField('Code from the app', error, 'Six digits.')}
  <button type="submit">Turn on two-step verification</button>
</form>`
  })
}

/** The recovery codes, on the one page that shows them. */
export function recoveryCodesPage ({ assets, session, codes }: SignedIn & { codes: readonly string[] }): string {
  return page({
    title: 'Your recovery codes',
    assets,
    session,
    main: html`<h1>Two-step verification is on</h1>
<section class="new-key" aria-labelledby="recovery-heading">
  <h2 id="recovery-heading">Your recovery codes</h2>
  <p class="warning"><strong>Save these codes now: they will not be shown again.</strong> If you lose your phone, each one logs you in
  once in place of a code from the app. Only digests of them are stored.</p>
  <ul class="recovery-codes" id="recovery-codes">${codes.map((code) => html`<li><code>${code}</code></li>`)}</ul>
</section>
<p><a href="/portal/keys">Back to your keys</a></p>`
  })
}

/** The log-in's second step: the code after the password. */
export function logInCodePage ({ assets, csrfToken, error }: { assets: AssetUrls, csrfToken: string, error?: string | undefined }): string {
  return page({
    title: 'Two-step verification',
    assets,
    main: html`<h1>Two-step verification</h1>
<p class="lead">Your password is right. Now type the code your authenticator app shows.</p>
${formMessage(error, undefined)}
<form class="stack" method="post" action="/portal/login/code">
  ${csrfField(csrfToken)}
  ${codeField('Code', error, 'Six digits from the app. Lost your phone? Type one of your recovery codes instead.')}
  <button type="submit">Log in</button>
</form>
<p class="hint">No code and no recovery code? An operator can turn two-step verification off for you
(<code>animal-store accounts reset-2fa --email you@example.com</code>).</p>`
  })
}
