import { html } from '../../core/html.js'
import { RESET_TOKEN_TTL_MS, VERIFY_TOKEN_TTL_MS } from '../../core/link-tokens.js'
import { spanText } from '../../core/span-text.js'
import { MIN_PASSWORD_LENGTH } from '../../core/passwords.js'
import type { AccountRow } from '../../storage/store.js'
import { csrfField, describedBy, formMessage, page, type AssetUrls } from './layout.js'

/** What every answer to the forgot-password form says, whether or not the email has an account. */
export const RESET_SENT = `If an account has this email address, a link to choose a new password is on its way to it. The link works once, for ${spanText(RESET_TOKEN_TTL_MS)}.`

export function forgotPasswordPage ({ assets, csrfToken, email, error, notice }: { assets: AssetUrls, csrfToken: string, email?: string | undefined, error?: string | undefined, notice?: string | undefined }): string {
  return page({
    title: 'Forgot password',
    assets,
    main: html`<h1>Forgot your password?</h1>
<p class="lead">Enter the email address of your account: we mail it a link to choose a new password.</p>
${formMessage(error, notice)}
<form class="stack" method="post" action="/portal/forgot">
  ${csrfField(csrfToken)}
  <label for="email">Email</label>
  <input id="email" name="email" type="email" autocomplete="username" required value="${email ?? ''}"${error === undefined ? '' : html` aria-describedby="form-error"`}>
  <button type="submit">Send the link</button>
</form>
<p><a href="/portal/login">Back to log-in</a></p>`
  })
}

export function resetPasswordPage ({ assets, csrfToken, token, email, error }: { assets: AssetUrls, csrfToken: string, token: string, email: string, error?: string | undefined }): string {
  return page({
    title: 'Choose a new password',
    assets,
    main: html`<h1>Choose a new password</h1>
<p class="lead">For the account ${email}. Every session of the account is signed out when it is set.</p>
${formMessage(error, undefined)}
<form class="stack" method="post" action="/portal/reset">
  ${csrfField(csrfToken)}
  <input type="hidden" name="token" value="${token}">
  <input type="hidden" name="username" value="${email}" autocomplete="username">
  <label for="password">New password</label>
  <input id="password" name="password" type="password" autocomplete="new-password" required minlength="${MIN_PASSWORD_LENGTH}" aria-describedby="${describedBy(error, 'password-hint')}">
  <p class="hint" id="password-hint">At least ${MIN_PASSWORD_LENGTH} characters.</p>
  <button type="submit">Set the new password</button>
</form>`
  })
}

export function emailVerifiedPage ({ assets, session }: { assets: AssetUrls, session?: { account: AccountRow, csrfToken: string } | undefined }): string {
  return page({
    title: 'Email verified',
    assets,
    session,
    main: html`<h1>Email address verified</h1>
<p class="message notice" role="status">Your email address is verified: you can generate API keys.</p>
<p><a href="${session === undefined ? '/portal/login' : '/portal/keys'}">${session === undefined ? 'Log in' : 'Go to your keys'}</a></p>`
  })
}

/** The keys page's section for an account whose email is not verified yet: why it cannot generate keys, and the resend form. */
export function verifyFirstSection (account: AccountRow, csrfToken: string) {
  return html`<section aria-labelledby="verify-heading" id="verify-first">
  <h2 id="verify-heading">Verify your email address</h2>
  <p>Before you can generate or roll keys, follow the link we mailed to ${account.email}. The link works for ${spanText(VERIFY_TOKEN_TTL_MS)}.</p>
  <form method="post" action="/portal/keys/verification">
    ${csrfField(csrfToken)}
    <button type="submit">Send the link again</button>
  </form>
</section>`
}
