import { createHash, randomBytes } from 'node:crypto'
import { readFileSync } from 'node:fs'
import { join } from 'node:path'
import cookie from '@fastify/cookie'
import formbody from '@fastify/formbody'
import type { FastifyError, FastifyInstance, FastifyReply, FastifyRequest } from 'fastify'
import { controlCharacterProblem, normalizeEmail, withoutControlCharacters } from '../core/accounts.js'
import { isWellFormedKeyId, MAX_LIVE_KEYS, SCOPES } from '../core/api-keys.js'
import { ApiError } from '../core/errors.js'
import type { ThrottledBy } from '../core/login-throttle.js'
import {
  AccountsError,
  durationOrFail,
  expiryOrFail,
  issueApiKey,
  KeyChangeRateError,
  keyLabelOrFail,
  keyUsageSince,
  LiveKeyLimitError,
  revokeOwnApiKey,
  rollApiKey,
  scopesOrFail
} from '../services/accounts.js'
import { StoreUnavailableError, type ApiKeyRow, type Store } from '../storage/store.js'
import { CSRF_FIELD, PresessionCsrf, sessionCsrfValid } from './csrf.js'
import { logIn, signUp, type Busy, type Throttled } from './log-in.js'
import { NewKeyCookie } from './new-key-cookie.js'
import { PasswordHasher } from './password.js'
import { cookieOptions, DEVICE_COOKIE, deviceCookieOptions, SESSION_COOKIE, Sessions, type PortalSession } from './session.js'
import { summarizeUsage } from './usage-chart.js'
import { choiceProblem, DEFAULT_EXPIRY_CHOICE, DEFAULT_GRACE_CHOICE, EXPIRY_CHOICES, GRACE_CHOICES, isOffered } from './choices.js'
import {
  errorPage,
  eventsPage,
  keyIdsInDetail,
  keyPage,
  keysPage,
  logInPage,
  revokedKeysPage,
  revokePage,
  rollPage,
  signUpPage,
  type AssetUrls,
  type KeyFormState
} from './views.js'

export interface PortalOptions {
  store: Store
  /** PUBLIC_BASE_URL: the API base in the first-request snippet; https here makes cookies Secure. */
  publicBaseUrl: string | undefined
}

/** What every portal page is sent with; no inline script or style anywhere, so the CSP can forbid both. */
const PAGE_HEADERS: Readonly<Record<string, string>> = {
  'content-security-policy': "default-src 'self'; script-src 'self'; style-src 'self'; frame-ancestors 'none'; form-action 'self'; base-uri 'none'",
  'x-frame-options': 'DENY',
  'referrer-policy': 'no-referrer',
  'cross-origin-opener-policy': 'same-origin',
  'cross-origin-resource-policy': 'same-origin',
  'permissions-policy': 'camera=(), microphone=(), geolocation=(), payment=()'
}
const MAX_FORM_BYTES = 16 * 1024
/** Revoked keys shown under the live ones; the rest are a link away, a page at a time. */
const REVOKED_ON_KEYS_PAGE = 10
const REVOKED_PER_PAGE = 50
const EVENTS_PER_PAGE = 50
/** Days of usage a key's page shows, one bar each. */
const USAGE_DAYS = 30
const HOST = /^[A-Za-z0-9.-]+(:[0-9]{1,5})?$|^\[[0-9A-Fa-f:.]+\](:[0-9]{1,5})?$/
const FORM_EXPIRED = 'This form has expired or was not sent from this site. Please try again.'

interface Asset { body: Buffer, type: string }

/** The web pages' static files: beside this module when run from source, beside the bundle once built (scripts/build.mjs). */
export const WEB_ASSETS_DIR = join(import.meta.dirname, 'assets')

type Assets = { files: Record<keyof AssetUrls, Asset & { path: string }>, urls: AssetUrls }
let loaded: Assets | undefined

/** The stylesheet, the copy-button script and the icon, read once; their URLs carry a digest of the content. */
function loadAssets (): Assets {
  if (loaded !== undefined) return loaded
  const read = (name: string, type: string): Asset & { path: string } => ({ path: `/assets/${name}`, body: readFileSync(join(WEB_ASSETS_DIR, name)), type })
  const files = {
    css: read('portal.css', 'text/css; charset=utf-8'),
    script: read('copy.js', 'text/javascript; charset=utf-8'),
    icon: read('favicon.svg', 'image/svg+xml')
  }
  const url = ({ path, body }: Asset & { path: string }): string => `/portal${path}?v=${createHash('sha256').update(body).digest('base64url').slice(0, 12)}`
  loaded = { files, urls: { css: url(files.css), script: url(files.script), icon: url(files.icon) } }
  return loaded
}

/** A single-valued form field (refuseRepeatedFields has refused a repeated one); anything but text counts as absent. */
function field (request: FastifyRequest, name: string): string | undefined {
  const body = request.body
  if (typeof body !== 'object' || body === null) return undefined
  const value = (body as Record<string, unknown>)[name]
  return typeof value === 'string' ? value : undefined
}

/** Every value of a field that may repeat (checkboxes): none when absent, undefined when anything is not text. */
function fieldValues (request: FastifyRequest, name: string): string[] | undefined {
  const body = request.body
  if (typeof body !== 'object' || body === null) return []
  const value = (body as Record<string, unknown>)[name]
  if (value === undefined) return []
  if (typeof value === 'string') return [value]
  return Array.isArray(value) && value.every((item) => typeof item === 'string') ? value as string[] : undefined
}

function sendPage (reply: FastifyReply, status: number, body: string): FastifyReply {
  return reply.code(status).type('text/html; charset=utf-8').send(body)
}

/** The portal's own response headers, on every page it sends. */
function setPageHeaders (request: FastifyRequest, reply: FastifyReply): void {
  reply.headers(PAGE_HEADERS)
  // Pages, and above all the one that shows a new key, must never be kept by a cache.
  if (reply.getHeader('cache-control') === undefined) reply.header('cache-control', 'no-store')
  if (request.protocol === 'https') reply.header('strict-transport-security', 'max-age=31536000')
}

export function isUnderPortal (url: string): boolean {
  return /^\/portal(\/|$|\?)/.test(url)
}

/** A status the framework gives a request it could not read, with the statusCode the portal's error page looks at. */
function requestError (statusCode: number, message: string, code = 'PORTAL_UNREADABLE_FORM'): FastifyError {
  return Object.assign(new Error(message), { statusCode, code, name: 'FastifyError' }) as FastifyError
}

declare module 'fastify' {
  interface FastifyContextConfig {
    /** The form fields a route reads as a list (checkboxes); every other field must come once. */
    repeatableFields?: readonly string[]
  }
}

const REPEATED_FIELD = 'PORTAL_REPEATED_FIELD'

/**
 * The first field the form sends more than once that its route does not read as a list. A
 * browser sends a text field or a <select> once; a second value is a tampered form, and
 * picking either one (or neither) would act on something the person never chose.
 */
function repeatedField (body: unknown, repeatable: readonly string[]): string | undefined {
  if (typeof body !== 'object' || body === null) return undefined
  return Object.entries(body).find(([name, value]) => Array.isArray(value) && !repeatable.includes(name))?.[0]
}

/**
 * The error page for a /portal request that failed before reaching the portal's routes (a path
 * segment beyond the router's limit): the framework's own errors are the API's, in JSON, so the
 * application hands /portal's to this.
 */
export function sendPortalFrameworkError (error: FastifyError, request: FastifyRequest, reply: FastifyReply): FastifyReply {
  const { status, title, message } = describeError(error, request)
  setPageHeaders(request, reply)
  return sendPage(reply, status, errorPage({ assets: loadAssets().urls, status, title, message }))
}

/** A wait as people say it: seconds under two minutes, minutes beyond. */
const duration = (seconds: number): string => {
  if (seconds < 120) return `${seconds} second${seconds === 1 ? '' : 's'}`
  const count = Math.ceil(seconds / 60)
  return `${count} minutes`
}

const THROTTLED_BY: Readonly<Record<ThrottledBy, string>> = {
  address: 'Too many attempts from your network.',
  pair: 'Too many failed log-ins for this account from your network.',
  device: 'Too many failed log-ins from this browser.',
  account: 'Too many failed log-ins for this account from browsers it has not logged in with before. A browser you have logged in with before is not held back.'
}

const BUSY: Readonly<Record<Busy['reason'], string>> = {
  client: 'Another log-in or sign-up from your network is being checked.',
  early: 'The portal is busy, and your network tried again before its wait ended: each early try makes the wait longer.',
  full: 'The portal is checking many passwords right now.'
}

/** What a log-in or sign-up refused before its password was checked says, with its Retry-After. */
function refusalOf (result: Throttled | Busy): { message: string, retryAfterSeconds: number } {
  const wait = `Try again in ${duration(result.retryAfterSeconds)}.`
  if (result.outcome === 'throttled') return { message: `${THROTTLED_BY[result.by]} ${wait}`, retryAfterSeconds: result.retryAfterSeconds }
  return { message: `${BUSY[result.reason]} ${wait}`, retryAfterSeconds: result.retryAfterSeconds }
}

const sentence = (text: string): string => text.charAt(0).toUpperCase() + text.slice(1) + (text.endsWith('.') ? '' : '.')

/**
 * The developer portal under /portal: sign-up, log-in and the account's API keys, as
 * server-rendered pages. Not part of the API: no API key, no JSON errors, not in the
 * OpenAPI document. Cookies and form bodies are parsed here only, so the API keeps its
 * strict JSON body handling.
 */
export async function portalRoutes (app: FastifyInstance, { store, publicBaseUrl }: PortalOptions): Promise<void> {
  await app.register(cookie)
  // The API's JSON parser is inherited; the portal reads forms as browsers send them, and refuses anything else with 415.
  app.removeAllContentTypeParsers()
  await app.register(formbody, { bodyLimit: MAX_FORM_BYTES })
  app.addContentTypeParser('*', function refuseBody (request, payload, done) {
    payload.resume()
    done(requestError(415, `content type ${request.headers['content-type'] ?? '(none)'} is not a form`), undefined)
  })
  app.addHook('preParsing', async function refuseEncodedForms (request) {
    const encoding = request.headers['content-encoding']
    const hasBody = request.headers['content-length'] !== undefined || request.headers['transfer-encoding'] !== undefined
    if (hasBody && encoding !== undefined && encoding.trim().toLowerCase() !== 'identity') throw requestError(415, `content encoding ${encoding} is not read`)
  })

  const policy = { publicHttps: publicBaseUrl?.startsWith('https:') === true }
  const sessions = new Sessions(store, policy)
  const presession = new PresessionCsrf(await store.setting('portal_csrf_secret', () => randomBytes(32).toString('base64url')), policy)
  const devices = { secret: await store.setting('portal_device_secret', () => randomBytes(32).toString('base64url')) }
  const newKeys = new NewKeyCookie(await store.setting('portal_new_key_secret', () => randomBytes(32).toString('base64url')), policy)
  const hasher = new PasswordHasher()
  const { files, urls: assets } = loadAssets()
  const hidden = { schema: { hide: true } }

  app.addHook('preHandler', async function refuseRepeatedFields (request) {
    const name = repeatedField(request.body, request.routeOptions.config.repeatableFields ?? [])
    if (name !== undefined) throw requestError(400, `The form sent the field “${withoutControlCharacters(name).slice(0, 40)}” more than once. Reload the page and send the form again.`, REPEATED_FIELD)
  })

  app.addHook('onSend', async function portalHeaders (request, reply, payload) {
    setPageHeaders(request, reply)
    return payload
  })

  const apiBaseUrl = (request: FastifyRequest): string => {
    if (publicBaseUrl !== undefined) return publicBaseUrl
    const host = HOST.test(request.host) ? request.host : 'localhost:8080'
    return `${request.protocol}://${host}/v1`
  }

  /** The session, or a redirect to the log-in page (saying the session ended when a cookie came without a live one). */
  async function sessionOrRedirect (request: FastifyRequest, reply: FastifyReply): Promise<PortalSession | undefined> {
    const session = await sessions.current(request)
    if (session === undefined) {
      const ended = sessions.hasCookie(request)
      if (ended) reply.clearCookie(SESSION_COOKIE, cookieOptions(request, policy))
      await reply.redirect(ended ? '/portal/login?ended=1' : '/portal/login', 303)
    }
    return session
  }

  interface KeysPageExtras {
    created?: { key: string, row: ApiKeyRow, replaces?: ApiKeyRow }
    error?: string
    notice?: string | undefined
    label?: string
    form?: KeyFormState
  }

  async function renderKeys (request: FastifyRequest, reply: FastifyReply, session: PortalSession, status: number, extras: KeysPageExtras): Promise<FastifyReply> {
    const live = await store.apiKeys.pageByAccount(session.account.id, { live: true, limit: MAX_LIVE_KEYS, offset: 0 })
    const revoked = await store.apiKeys.pageByAccount(session.account.id, { live: false, limit: REVOKED_ON_KEYS_PAGE, offset: 0 })
    return sendPage(reply, status, keysPage({ assets, session, live: live.rows, revoked: revoked.rows, revokedTotal: revoked.total, apiBaseUrl: apiBaseUrl(request), ...extras }))
  }

  for (const asset of Object.values(files)) {
    app.get(asset.path, hidden, async function portalAsset (_request, reply) {
      return reply.type(asset.type).header('cache-control', 'public, max-age=86400').send(asset.body)
    })
  }

  app.get('/', hidden, async function portalHome (request, reply) {
    return reply.redirect(await sessions.current(request) === undefined ? '/portal/login' : '/portal/keys', 303)
  })

  app.get('/login', hidden, async function showLogIn (request, reply) {
    if (await sessions.current(request) !== undefined) return reply.redirect('/portal/keys', 303)
    const query = request.query as Record<string, unknown>
    const notice = query.logged_out !== undefined
      ? 'You have logged out.'
      : query.ended !== undefined ? 'Your session has ended. Please log in again.' : undefined
    return sendPage(reply, 200, logInPage({ assets, csrfToken: presession.issue(request, reply), notice }))
  })

  app.post('/login', hidden, async function submitLogIn (request, reply) {
    const emailText = (field(request, 'email') ?? '').slice(0, 320)
    const render = (status: number, error: string): FastifyReply =>
      sendPage(reply, status, logInPage({ assets, csrfToken: presession.issue(request, reply), email: withoutControlCharacters(emailText), error }))
    if (!presession.verify(request, field(request, CSRF_FIELD))) return render(403, FORM_EXPIRED)
    const password = field(request, 'password') ?? ''
    const problem = controlCharacterProblem('email', emailText) ?? controlCharacterProblem('password', password)
    if (problem !== undefined) return render(400, problem)
    const email = normalizeEmail(emailText)
    if (email === undefined || password === '') return render(400, 'Enter your email address and your password.')

    const result = await logIn(store, hasher, devices, { email, password, ip: request.ip, deviceCookie: request.cookies[DEVICE_COOKIE] })
    if (result.outcome === 'throttled' || result.outcome === 'busy') {
      const { message, retryAfterSeconds } = refusalOf(result)
      reply.header('retry-after', String(retryAfterSeconds))
      return render(429, message)
    }
    // One message for an unknown email, an account without a password and a wrong password.
    if (result.outcome === 'refused') return render(401, 'The email address or the password is not correct.')
    await sessions.start(request, reply, result.accountId)
    reply.setCookie(DEVICE_COOKIE, result.deviceCookie, deviceCookieOptions(request, policy))
    presession.clear(request, reply)
    request.log.info({ accountId: result.accountId }, 'portal log-in')
    return reply.redirect('/portal/keys', 303)
  })

  app.get('/signup', hidden, async function showSignUp (request, reply) {
    if (await sessions.current(request) !== undefined) return reply.redirect('/portal/keys', 303)
    return sendPage(reply, 200, signUpPage({ assets, csrfToken: presession.issue(request, reply) }))
  })

  app.post('/signup', hidden, async function submitSignUp (request, reply) {
    const emailText = (field(request, 'email') ?? '').slice(0, 320)
    const render = (status: number, error: string): FastifyReply =>
      sendPage(reply, status, signUpPage({ assets, csrfToken: presession.issue(request, reply), email: withoutControlCharacters(emailText), error }))
    if (!presession.verify(request, field(request, CSRF_FIELD))) return render(403, FORM_EXPIRED)
    const password = field(request, 'password') ?? ''
    const problem = controlCharacterProblem('email', emailText) ?? controlCharacterProblem('password', password)
    if (problem !== undefined) return render(400, problem)
    const email = normalizeEmail(emailText)
    if (email === undefined) return render(400, 'Enter a valid email address, such as you@example.com.')

    const result = await signUp(store, hasher, devices, { email, password, ip: request.ip })
    switch (result.outcome) {
      case 'invalid_password':
        return render(400, result.message)
      case 'throttled':
      case 'busy': {
        const { message, retryAfterSeconds } = refusalOf(result)
        reply.header('retry-after', String(retryAfterSeconds))
        return render(429, message)
      }
      case 'duplicate':
        return render(409, 'An account with this email address already exists: log in instead. If an operator created it with the ' +
          'animal-store command, ask them to set a password for it (animal-store accounts set-password).')
      case 'ok':
        await sessions.start(request, reply, result.accountId)
        reply.setCookie(DEVICE_COOKIE, result.deviceCookie, deviceCookieOptions(request, policy))
        presession.clear(request, reply)
        request.log.info({ accountId: result.accountId }, 'portal sign-up')
        return reply.redirect('/portal/keys', 303)
    }
  })

  app.post('/logout', hidden, async function submitLogOut (request, reply) {
    const session = await sessionOrRedirect(request, reply)
    if (session === undefined) return reply
    if (!sessionCsrfValid(session, field(request, CSRF_FIELD))) {
      return sendPage(reply, 403, errorPage({ assets, status: 403, title: 'Form expired', message: FORM_EXPIRED, session }))
    }
    await sessions.end(request, reply, session)
    return reply.redirect('/portal/login?logged_out=1', 303)
  })

  app.get('/keys', hidden, async function showKeys (request, reply) {
    const session = await sessionOrRedirect(request, reply)
    if (session === undefined) return reply
    const { revoked, created } = request.query as Record<string, unknown>
    if (typeof created === 'string') return renderKeys(request, reply, session, 200, await createdKeyExtras(request, reply, session, created))
    newKeys.take(request, reply)
    const key = typeof revoked === 'string' ? await ownKey(session, revoked) : undefined
    const notice = key === undefined || key.live
      ? undefined
      : key.revokedAt === null
        ? `The key ${key.label ?? key.prefix} has expired: the API refuses it.`
        : `The key ${key.label ?? key.prefix} has been revoked: the API refuses it from now on.`
    return renderKeys(request, reply, session, 200, { notice })
  })

  /** What the redirect after a generation or a roll shows: the secret the first time, a notice that it was shown after that. */
  async function createdKeyExtras (request: FastifyRequest, reply: FastifyReply, session: PortalSession, keyId: string): Promise<KeysPageExtras> {
    const handed = newKeys.take(request, reply)
    const row = await ownKey(session, keyId)
    if (row === undefined) return {}
    if (handed?.keyId !== row.id) {
      return { notice: `The key ${row.label ?? row.prefix} was shown once, right after it was made, and cannot be shown again. If you did not copy it, revoke it and generate a new one.` }
    }
    const replaces = handed.replacesId === undefined ? undefined : await ownKey(session, handed.replacesId)
    return { created: { key: handed.key, row, ...(replaces === undefined ? {} : { replaces }) }, notice: replaces === undefined ? undefined : rolledNotice(replaces) }
  }

  app.get('/keys/revoked', hidden, async function showRevokedKeys (request, reply) {
    const session = await sessionOrRedirect(request, reply)
    if (session === undefined) return reply
    const asked = (request.query as Record<string, unknown>).page
    const page = typeof asked === 'string' && /^[1-9][0-9]{0,5}$/.test(asked) ? Number(asked) : 1
    const revoked = await store.apiKeys.pageByAccount(session.account.id, { live: false, limit: REVOKED_PER_PAGE, offset: (page - 1) * REVOKED_PER_PAGE })
    const pages = Math.max(1, Math.ceil(revoked.total / REVOKED_PER_PAGE))
    if (page > pages) return reply.redirect(`/portal/keys/revoked?page=${pages}`, 303)
    return sendPage(reply, 200, revokedKeysPage({ assets, session, keys: revoked.rows, total: revoked.total, page, pages }))
  })

  app.post('/keys', { ...hidden, config: { repeatableFields: ['scopes'] } }, async function generateKey (request, reply) {
    const session = await sessionOrRedirect(request, reply)
    if (session === undefined) return reply
    if (!sessionCsrfValid(session, field(request, CSRF_FIELD))) {
      return sendPage(reply, 403, errorPage({ assets, status: 403, title: 'Form expired', message: FORM_EXPIRED, session }))
    }
    const labelText = field(request, 'label') ?? ''
    const shownLabel = withoutControlCharacters(labelText).slice(0, 500)
    const scopeTexts = fieldValues(request, 'scopes')
    const expiryText = field(request, 'expires_in') ?? DEFAULT_EXPIRY_CHOICE
    // The form as it was sent, for the page that says what is wrong with it: known choices only.
    const form: KeyFormState = {
      scopes: (scopeTexts ?? []).filter((scope) => SCOPES.some((known) => known === scope)),
      expiresIn: isOffered(EXPIRY_CHOICES, expiryText) ? expiryText : DEFAULT_EXPIRY_CHOICE
    }
    const refuse = (status: number, error: string): Promise<FastifyReply> => renderKeys(request, reply, session, status, { error, label: shownLabel, form })
    let created: { key: string, row: ApiKeyRow }
    try {
      const label = keyLabelOrFail(labelText)
      if (scopeTexts === undefined || scopeTexts.length === 0) {
        return await refuse(400, 'Choose at least one scope: animals:read to list and read animals, animals:write to add them.')
      }
      // Each value checked on its own, so a control character is named as such, never split away.
      for (const scope of scopeTexts) scopesOrFail(scope)
      const scopes = scopesOrFail(scopeTexts.join(' '))
      const expiryRefusal = choiceProblem(EXPIRY_CHOICES, expiryText, 'when the key expires')
      if (expiryRefusal !== undefined) return await refuse(400, expiryRefusal)
      const expiresAt = expiryText === 'never' ? null : expiryOrFail({ expiresIn: expiryText })
      created = await issueApiKey(store, session.account.id, label, { scopes, expiresAt }, { actor: 'portal', address: request.ip })
    } catch (error) {
      if (error instanceof KeyChangeRateError) {
        reply.header('retry-after', String(error.retryAfterSeconds))
        return refuse(429, sentence(error.message))
      }
      if (error instanceof LiveKeyLimitError) {
        return refuse(400, `You have ${error.limit} active keys, the most an account may have (a rolled key counts until its grace period ends). Revoke one you no longer use first.`)
      }
      if (error instanceof AccountsError) return refuse(400, sentence(error.message))
      throw error
    }
    request.log.info({ accountId: session.account.id, keyId: created.row.id }, 'portal: API key generated')
    // Post-redirect-get: the page that shows the secret once (no-store, like every portal page) can be reloaded without posting again.
    newKeys.put(request, reply, { key: created.key, keyId: created.row.id })
    return reply.redirect(`/portal/keys?created=${created.row.id}`, 303)
  })

  /** The key if it belongs to the session's account; any other key is answered exactly like a key that does not exist. */
  async function ownKey (session: PortalSession, keyId: string): Promise<ApiKeyRow | undefined> {
    if (!isWellFormedKeyId(keyId)) return undefined
    const key = await store.apiKeys.findById(keyId)
    return key?.accountId === session.account.id ? key : undefined
  }

  const noSuchKey = (reply: FastifyReply, session: PortalSession): FastifyReply =>
    sendPage(reply, 404, errorPage({ assets, status: 404, title: 'No such key', message: 'None of your keys has this id.', session }))

  app.get<{ Params: { keyId: string } }>('/keys/:keyId/revoke', hidden, async function confirmRevokeKey (request, reply) {
    const session = await sessionOrRedirect(request, reply)
    if (session === undefined) return reply
    const key = await ownKey(session, request.params.keyId)
    if (key === undefined) return noSuchKey(reply, session)
    if (!key.live) return reply.redirect(`/portal/keys?revoked=${key.id}`, 303)
    return sendPage(reply, 200, revokePage({ assets, session, key }))
  })

  app.post<{ Params: { keyId: string } }>('/keys/:keyId/revoke', hidden, async function revokeKey (request, reply) {
    const session = await sessionOrRedirect(request, reply)
    if (session === undefined) return reply
    if (!sessionCsrfValid(session, field(request, CSRF_FIELD))) {
      return sendPage(reply, 403, errorPage({ assets, status: 403, title: 'Form expired', message: FORM_EXPIRED, session }))
    }
    const key = await ownKey(session, request.params.keyId)
    if (key === undefined) return noSuchKey(reply, session)
    try {
      // Records the key's invalidation: every instance drops it within a second.
      await revokeOwnApiKey(store, key, { actor: 'portal', address: request.ip })
    } catch (error) {
      if (!(error instanceof KeyChangeRateError)) throw error
      reply.header('retry-after', String(error.retryAfterSeconds))
      return sendPage(reply, 429, errorPage({ assets, status: 429, title: 'Too many revocations', message: `${sentence(error.message)} An operator can revoke it at once with animal-store keys revoke ${key.id}.`, session }))
    }
    request.log.info({ accountId: session.account.id, keyId: key.id }, 'portal: API key revoked')
    return reply.redirect(`/portal/keys?revoked=${key.id}`, 303)
  })

  app.get<{ Params: { keyId: string } }>('/keys/:keyId', hidden, async function showKey (request, reply) {
    const session = await sessionOrRedirect(request, reply)
    if (session === undefined) return reply
    const key = await ownKey(session, request.params.keyId)
    if (key === undefined) return noSuchKey(reply, session)
    const now = Date.now()
    const [{ counts }, successor] = await Promise.all([
      keyUsageSince(store, key.id, USAGE_DAYS, now),
      key.rolledTo === null ? undefined : ownKey(session, key.rolledTo)
    ])
    return sendPage(reply, 200, keyPage({ assets, session, key, successor, usage: summarizeUsage(counts, USAGE_DAYS, now), now }))
  })

  /** What the page after a roll says about the key it replaced. */
  const rolledNotice = (old: ApiKeyRow): string => old.live && old.expiresAt !== null
    ? `The key ${old.label ?? old.prefix} was rolled: it keeps working until ${old.expiresAt.toISOString().slice(0, 16).replace('T', ' ')} UTC, then the API refuses it. Move your programs to the new key before then.`
    : `The key ${old.label ?? old.prefix} was rolled: the API refuses it from now on.`

  /** Why a key cannot be rolled, or undefined when it can. */
  const notRollable = (key: ApiKeyRow): string | undefined => {
    if (!key.live) return `The key ${key.label ?? key.prefix} has ${key.revokedAt === null ? 'expired' : 'been revoked'}: there is nothing to roll. Generate a new key instead.`
    if (key.rolledTo !== null) return `The key ${key.label ?? key.prefix} has been rolled already and works only until its grace period ends. Roll the key that replaced it instead.`
    return undefined
  }

  app.get<{ Params: { keyId: string } }>('/keys/:keyId/roll', hidden, async function confirmRollKey (request, reply) {
    const session = await sessionOrRedirect(request, reply)
    if (session === undefined) return reply
    const key = await ownKey(session, request.params.keyId)
    if (key === undefined) return noSuchKey(reply, session)
    const refusal = notRollable(key)
    if (refusal !== undefined) return sendPage(reply, 409, errorPage({ assets, status: 409, title: 'Cannot roll this key', message: refusal, session }))
    return sendPage(reply, 200, rollPage({ assets, session, key }))
  })

  app.post<{ Params: { keyId: string } }>('/keys/:keyId/roll', hidden, async function rollKey (request, reply) {
    const session = await sessionOrRedirect(request, reply)
    if (session === undefined) return reply
    if (!sessionCsrfValid(session, field(request, CSRF_FIELD))) {
      return sendPage(reply, 403, errorPage({ assets, status: 403, title: 'Form expired', message: FORM_EXPIRED, session }))
    }
    const key = await ownKey(session, request.params.keyId)
    if (key === undefined) return noSuchKey(reply, session)
    const refusal = notRollable(key)
    if (refusal !== undefined) return sendPage(reply, 409, errorPage({ assets, status: 409, title: 'Cannot roll this key', message: refusal, session }))
    const graceText = field(request, 'grace') ?? DEFAULT_GRACE_CHOICE
    const shownGrace = isOffered(GRACE_CHOICES, graceText) ? graceText : DEFAULT_GRACE_CHOICE
    const graceRefusal = choiceProblem(GRACE_CHOICES, graceText, 'how long the old key keeps working')
    if (graceRefusal !== undefined) return sendPage(reply, 400, rollPage({ assets, session, key, grace: shownGrace, error: graceRefusal }))
    let rolled: { key: string, row: ApiKeyRow, old: ApiKeyRow }
    try {
      const graceMs = durationOrFail(graceText, 'the grace period')
      rolled = await rollApiKey(store, key.id, { graceMs, ownerId: session.account.id }, { actor: 'portal', address: request.ip })
    } catch (error) {
      if (error instanceof KeyChangeRateError) {
        reply.header('retry-after', String(error.retryAfterSeconds))
        return sendPage(reply, 429, errorPage({ assets, status: 429, title: 'Too many new keys', message: sentence(error.message), session }))
      }
      if (error instanceof LiveKeyLimitError) {
        return sendPage(reply, 400, rollPage({
          assets,
          session,
          key,
          grace: shownGrace,
          error: `You have ${error.limit} active keys, the most an account may have, and rolling needs room for the new key: a rolled key counts ` +
            'until its grace period ends, even a grace period of none. Revoke a key you no longer use first, then roll this one.'
        }))
      }
      if (error instanceof AccountsError) return sendPage(reply, 400, rollPage({ assets, session, key, grace: shownGrace, error: sentence(error.message) }))
      throw error
    }
    request.log.info({ accountId: session.account.id, keyId: rolled.row.id, rolledKeyId: key.id }, 'portal: API key rolled')
    // Like a generated key: redirected to the page that shows the secret once.
    newKeys.put(request, reply, { key: rolled.key, keyId: rolled.row.id, replacesId: key.id })
    return reply.redirect(`/portal/keys?created=${rolled.row.id}`, 303)
  })

  app.get('/events', hidden, async function showEvents (request, reply) {
    const session = await sessionOrRedirect(request, reply)
    if (session === undefined) return reply
    const asked = (request.query as Record<string, unknown>).before
    const beforeId = typeof asked === 'string' && /^[1-9][0-9]{0,14}$/.test(asked) ? Number(asked) : undefined
    // One more than shown: whether there are older events, without counting them.
    const events = await store.audit.page(session.account.id, { limit: EVENTS_PER_PAGE + 1, beforeId })
    const shown = events.slice(0, EVENTS_PER_PAGE)
    const olderBefore = events.length > EVENTS_PER_PAGE ? shown[shown.length - 1]?.id : undefined
    const keyIds = new Set(shown.flatMap((event) => [...(event.keyId === null ? [] : [event.keyId]), ...keyIdsInDetail(event.detail)]))
    const keys = new Map((await Promise.all([...keyIds].map(async (id) => await ownKey(session, id)))).flatMap((key) => key === undefined ? [] : [[key.id, key] as const]))
    return sendPage(reply, 200, eventsPage({ assets, session, events: shown, olderBefore, paged: beforeId !== undefined, keys }))
  })

  app.setNotFoundHandler(function portalNotFound (_request, reply) {
    return sendPage(reply, 404, errorPage({ assets, status: 404, title: 'Page not found', message: 'There is no page at this address.' }))
  })

  // People read these errors: pages, not the API's JSON.
  app.setErrorHandler(function portalError (error: FastifyError | Error, request, reply) {
    const { status, title, message } = describeError(error, request)
    if (status === 503) reply.header('retry-after', '1')
    return sendPage(reply, status, errorPage({ assets, status, title, message }))
  })
}

function describeError (error: FastifyError | Error, request: FastifyRequest): { status: number, title: string, message: string } {
  if (error instanceof StoreUnavailableError) {
    request.log.warn({ err: error.reason }, 'database unavailable')
    return { status: 503, title: 'Unavailable', message: 'The portal is briefly unavailable. Please try again in a moment.' }
  }
  if (error instanceof ApiError) {
    return error.status === 404
      ? { status: 404, title: 'Page not found', message: 'There is no page at this address.' }
      : { status: error.status, title: 'Request refused', message: error.message }
  }
  const status = (error as FastifyError).statusCode
  if (status === 413) return { status, title: 'Form too large', message: 'The form sent is too large.' }
  if ((error as FastifyError).code === REPEATED_FIELD) return { status: 400, title: 'Form refused', message: error.message }
  if (status === 415) return { status, title: 'Not a form', message: 'The portal reads forms as browsers send them (application/x-www-form-urlencoded, not compressed).' }
  if ((error as FastifyError).code === 'FST_ERR_MAX_PARAM_LENGTH') return { status: 404, title: 'Page not found', message: 'There is no page at this address.' }
  if (status === 503) return { status, title: 'Unavailable', message: 'The service is restarting. Please try again in a moment.' }
  if (status !== undefined && status >= 400 && status < 500) return { status, title: 'Bad request', message: 'The request could not be read.' }
  request.log.error({ err: error }, 'unexpected error in the developer portal')
  return { status: 500, title: 'Something went wrong', message: `Something went wrong on our side. Quote request id ${request.id} if you report it.` }
}
