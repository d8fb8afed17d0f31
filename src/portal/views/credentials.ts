import { html } from '../../core/html.js'
import { VERIFY_TOKEN_TTL_MS } from '../../core/link-tokens.js'
import { spanText } from '../../core/span-text.js'
import { MIN_PASSWORD_LENGTH } from '../../core/passwords.js'
import { csrfField, describedBy, formMessage, page, type AssetUrls } from './layout.js'

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
<p><a href="/portal/forgot">Forgot your password?</a></p>
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

/** What every accepted sign-up answers, whether or not the email has an account. */
export function checkEmailPage ({ assets, email }: { assets: AssetUrls, email: string }): string {
  return page({
    title: 'Check your email',
    assets,
    main: html`<h1>Check your email</h1>
<p class="message notice" role="status">We sent a link to ${email}. Follow it to verify your email address, then log in. The link works once, for ${spanText(VERIFY_TOKEN_TTL_MS)}.</p>
<p>If this address already has an account, the message says so instead: log in, or choose a new password if you forgot it.</p>
<p><a href="/portal/login">Log in</a></p>`
  })
}
