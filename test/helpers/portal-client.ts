import assert from 'node:assert/strict'
import type { FastifyInstance, LightMyRequestResponse } from 'fastify'
import { newCsrfToken } from '../../src/core/csrf.js'
import { hashPassword, scryptParamsAt } from '../../src/core/passwords.js'
import { hashSessionToken, newSessionToken, sessionExpiry } from '../../src/core/sessions.js'
import { SESSION_COOKIE } from '../../src/portal/session.js'
import type { Store } from '../../src/storage/store.js'
import { configOfTestApp, storeOfTestApp } from './build-app.js'
import { eventually } from './eventually.js'
import { TEST_HASH_COST } from './password-cost.js'

/** The password of the accounts signedUpAs makes. */
export const TEST_PASSWORD = 'correct horse battery staple'

/** TEST_PASSWORD's scrypt hash at each cost, worked out once per process: at the default, a hash costs a large fraction of a second of CPU. */
const testPasswordHashes = new Map<number, Promise<string>>()

/**
 * An account of the email with TEST_PASSWORD, as sign-up leaves it once its email is verified, without
 * hashing a password: the hash is made once per process and cost (the app's PASSWORD_HASH_COST, so that a
 * log-in does not remake it). For tests whose subject comes after sign-up, including ones that talk to a
 * server in another process on the same database.
 */
export async function accountWithTestPassword (store: Store, email: string, cost = TEST_HASH_COST): Promise<number> {
  let hash = testPasswordHashes.get(cost)
  if (hash === undefined) testPasswordHashes.set(cost, hash = hashPassword(TEST_PASSWORD, scryptParamsAt(cost)))
  return (await store.accounts.create({ email, name: null, passwordHash: await hash })).id
}

/** The path and query of the link in the newest message of that kind to the recipient, read from the outbox. */
export async function linkPathOf (store: Store, recipient: string, kind: string): Promise<string> {
  const mail = (await store.mailOutbox.list({ pendingOnly: false, limit: 1000 })).find((row) => row.recipient === recipient && row.kind === kind)
  assert.ok(mail, `no ${kind} message to ${recipient} in the outbox`)
  const url = new URL(mail.link)
  return url.pathname + url.search
}

/** The Content-Security-Policy every portal page carries. */
export const CSP = "default-src 'self'; script-src 'self'; style-src 'self'; frame-ancestors 'none'; form-action 'self'; base-uri 'none'"

/** The security headers every portal answer carries. */
export function assertPortalHeaders (response: { headers: Record<string, unknown>, statusCode: number }, context: string): void {
  assert.equal(response.headers['content-security-policy'], CSP, context)
  assert.equal(response.headers['x-frame-options'], 'DENY', context)
  assert.equal(response.headers['referrer-policy'], 'no-referrer', context)
  assert.equal(response.headers['cache-control'], 'no-store', context)
  assert.equal(response.headers['x-content-type-options'], 'nosniff', context)
}

/** No inline script, style or event handler: what the CSP would block. */
export function assertNoInlineCode (body: string, context: string): void {
  // Attribute values emptied: escaped text inside them is no attribute.
  const tags = (body.match(/<[a-z][^>]*>/gi) ?? []).map((tag) => tag.replace(/="[^"]*"/g, '=""'))
  assert.deepEqual(tags.filter((tag) => /^<script\b/i.test(tag) && !/\ssrc=""/.test(tag)), [], `inline script in ${context}`)
  assert.deepEqual(tags.filter((tag) => /^<style\b|\sstyle=|\son[a-z]+=/i.test(tag)), [], `inline style or event handler in ${context}`)
}

/** Reads the hidden CSRF field of the (first) form of a portal page. */
export function csrfTokenOf (body: string): string {
  const match = /<input type="hidden" name="_csrf" value="([^"]+)">/.exec(body)
  assert.ok(match?.[1], `no CSRF field in the page:\n${body}`)
  return match[1]
}

/** The secret of a key just generated, as the page shows it. */
export function newKeyOf (body: string): string {
  const match = /<code id="new-key-value">(ask_(?:test_)?[0-9A-Za-z]+)<\/code>/.exec(body)
  assert.ok(match?.[1], `no new key in the page:\n${body}`)
  return match[1]
}

/** What the create form sends when left as it is: both scopes checked, no expiry. */
export const DEFAULT_KEY_FIELDS: Readonly<Record<string, readonly string[] | string>> = { scopes: ['animals:read', 'animals:write'], expires_in: 'never' }

/** A form url-encoded, a field given as an array sent once per value (as checkboxes are). */
export function formBody (fields: Readonly<Record<string, string | readonly string[]>>): string {
  const form = new URLSearchParams()
  for (const [name, value] of Object.entries(fields)) for (const item of typeof value === 'string' ? [value] : value) form.append(name, item)
  return form.toString()
}

/** The text of an error or notice paragraph. */
export function messageOf (body: string): string {
  return /<p class="message [a-z]+" [^>]*>([^<]*)<\/p>/.exec(body)?.[1] ?? ''
}

/**
 * A browser for app.inject: keeps the cookies the portal sets (as a browser would, by
 * name; Max-Age=0 deletes) and sends forms url-encoded.
 */
export class PortalClient {
  readonly cookies = new Map<string, string>()

  constructor (private readonly app: FastifyInstance, readonly remoteAddress = '127.0.0.1') {}

  private cookieHeader (): Record<string, string> {
    return this.cookies.size === 0 ? {} : { cookie: [...this.cookies].map(([name, value]) => `${name}=${value}`).join('; ') }
  }

  private keep (response: LightMyRequestResponse): LightMyRequestResponse {
    const header = response.headers['set-cookie']
    for (const line of header === undefined ? [] : Array.isArray(header) ? header : [header]) {
      const [pair = ''] = line.split(';')
      const name = pair.slice(0, pair.indexOf('='))
      if (/;\s*Max-Age=0/i.test(line)) this.cookies.delete(name)
      else this.cookies.set(name, pair.slice(name.length + 1))
    }
    return response
  }

  async get (url: string, headers: Record<string, string> = {}): Promise<LightMyRequestResponse> {
    return this.keep(await this.app.inject({ url, remoteAddress: this.remoteAddress, headers: { ...this.cookieHeader(), ...headers } }))
  }

  async post (url: string, fields: Readonly<Record<string, string | readonly string[]>>, headers: Record<string, string> = {}): Promise<LightMyRequestResponse> {
    return this.keep(await this.app.inject({
      method: 'POST',
      url,
      remoteAddress: this.remoteAddress,
      headers: { 'content-type': 'application/x-www-form-urlencoded', ...this.cookieHeader(), ...headers },
      payload: formBody(fields)
    }))
  }

  /** Opens the page and posts its form with the page's CSRF token plus the fields. */
  async submit (pageUrl: string, actionUrl: string, fields: Readonly<Record<string, string | readonly string[]>>): Promise<LightMyRequestResponse> {
    const page = await this.get(pageUrl)
    assert.equal(page.statusCode, 200, page.body)
    return this.post(actionUrl, { _csrf: csrfTokenOf(page.body), ...fields })
  }

  /**
   * Signs up as a person would: submits the form and, when it is accepted (the "check your email" page,
   * the same for every email), reads the message it wrote to the outbox (the app writes it just after
   * its answer). For a new account, follows the verification link (unless `verify: false`) and logs in,
   * and answers that log-in (303 to the keys page). For an email that has an account (its owner got the
   * "someone tried to sign up" message), or any refusal, answers the sign-up's own page.
   */
  async signUp (email: string, password: string, { verify = true }: { verify?: boolean } = {}): Promise<LightMyRequestResponse> {
    const store = storeOfTestApp(this.app)
    assert.ok(store, 'PortalClient.signUp needs an app built by buildTestApp, to read its outbox')
    const recipient = email.trim().toLowerCase()
    const before = (await store.mailOutbox.list({ pendingOnly: false, limit: 1 }))[0]?.id ?? 0
    const answer = await this.submit('/portal/signup', '/portal/signup', { email, password })
    if (answer.statusCode !== 200) return answer
    assert.match(answer.body, /<h1>Check your email<\/h1>/, answer.body)
    const mail = await eventually(async () => {
      const found = (await store.mailOutbox.list({ pendingOnly: false, limit: 1000 }))
        .find((row) => row.id > before && row.recipient === recipient && (row.kind === 'verify_email' || row.kind === 'sign_up_existing'))
      assert.ok(found, `no message to ${recipient} after its sign-up`)
      return found
    }, { timeout: 10_000 })
    if (mail.kind !== 'verify_email') return answer
    if (verify) {
      const url = new URL(mail.link)
      const verified = await this.get(url.pathname + url.search)
      assert.equal(verified.statusCode, 200, verified.body)
    }
    return await this.logIn(email, password)
  }

  /**
   * What signUp(email, TEST_PASSWORD) leaves behind, without hashing a password: the account, with
   * the hash of TEST_PASSWORD made once per process (so logIn works), and a session as a log-in
   * starts it, whose cookie this browser now holds. For tests whose subject comes after sign-up;
   * sign-up itself (its audit event, device cookie and throttling) is tested with signUp.
   */
  async signedUpAs (store: Store, email: string): Promise<number> {
    const accountId = await accountWithTestPassword(store, email, configOfTestApp(this.app)?.passwordHashCost)
    const token = newSessionToken()
    const now = new Date()
    await store.sessions.create({ tokenHash: hashSessionToken(token), accountId, csrfToken: newCsrfToken(), createdAt: now, expiresAt: sessionExpiry(now, now) })
    this.cookies.set(SESSION_COOKIE, token)
    return accountId
  }

  async logIn (email: string, password: string): Promise<LightMyRequestResponse> {
    return this.submit('/portal/login', '/portal/login', { email, password })
  }

  /** Follows the redirect after a generation or a roll to the page that shows the new key once. */
  async showNewKey (posted: LightMyRequestResponse): Promise<{ response: LightMyRequestResponse, key: string }> {
    assert.equal(posted.statusCode, 303, posted.body)
    const location = String(posted.headers.location)
    assert.match(location, /^\/portal\/keys\?created=key_[0-9A-Za-z]{16}$/)
    const response = await this.get(location)
    assert.equal(response.statusCode, 200, response.body)
    return { response, key: newKeyOf(response.body) }
  }

  /** Generates a key from the keys page (both scopes and no expiry unless told); returns the page that shows it and its secret. */
  async generateKey (label: string, fields: Readonly<Record<string, string | readonly string[]>> = {}): Promise<{ response: LightMyRequestResponse, key: string }> {
    return this.showNewKey(await this.submit('/portal/keys', '/portal/keys', { ...DEFAULT_KEY_FIELDS, label, ...fields }))
  }
}
