import type { FastifyReply, FastifyRequest } from 'fastify'
import type { CookieSerializeOptions } from '@fastify/cookie'
import { newCsrfToken } from '../core/csrf.js'
import { DEVICE_COOKIE_MAX_AGE_MS } from '../core/device-cookies.js'
import {
  hashSessionToken,
  isSessionLive,
  isWellFormedSessionToken,
  newSessionToken,
  sessionExpiry,
  sessionTouch
} from '../core/sessions.js'
import { withoutControlCharacters } from '../core/accounts.js'
import type { AccountRow, Store } from '../storage/store.js'

export const SESSION_COOKIE = 'portal_session'
/** Marks a browser that has logged in to an account before (src/core/device-cookies.ts). */
export const DEVICE_COOKIE = 'portal_device'
export const COOKIE_PATH = '/portal'
const MAX_USER_AGENT = 512

export interface PortalSession {
  tokenHash: string
  account: AccountRow
  /** The synchronizer token every form of this session must send back. */
  csrfToken: string
}

export interface CookiePolicy {
  /** PUBLIC_BASE_URL is https: browsers reach the service over HTTPS even when a proxy speaks HTTP to it. */
  publicHttps: boolean
}

/**
 * HttpOnly (no script reads it), SameSite=Lax (not sent on cross-site posts), Path=/portal
 * (never sent to the API), Secure whenever the browser talks HTTPS to us. No Max-Age: the
 * cookie ends with the browser, the session on the server ends sooner or later anyway.
 */
export function cookieOptions (request: FastifyRequest, policy: CookiePolicy): CookieSerializeOptions {
  return { path: COOKIE_PATH, httpOnly: true, sameSite: 'lax', secure: policy.publicHttps || request.protocol === 'https' }
}

/**
 * The device cookie outlives sessions and browser restarts (OWASP: a device cookie is
 * long-lived), with the same HttpOnly, SameSite, Path and Secure as the session's. Log-out
 * leaves it: the browser is still one the account has used.
 */
export function deviceCookieOptions (request: FastifyRequest, policy: CookiePolicy): CookieSerializeOptions {
  return { ...cookieOptions(request, policy), maxAge: DEVICE_COOKIE_MAX_AGE_MS / 1000 }
}

/** Server-side portal sessions: the cookie carries a random token, the database its digest. */
export class Sessions {
  constructor (private readonly store: Store, private readonly policy: CookiePolicy) {}

  /** Whether the request carries a session cookie at all (live or not). */
  hasCookie (request: FastifyRequest): boolean {
    return request.cookies[SESSION_COOKIE] !== undefined
  }

  /** The live session of the request; undefined without a cookie, or when its session has ended or expired. */
  async current (request: FastifyRequest): Promise<PortalSession | undefined> {
    const token = request.cookies[SESSION_COOKIE]
    if (token === undefined || !isWellFormedSessionToken(token)) return undefined
    const tokenHash = hashSessionToken(token)
    const row = await this.store.sessions.findByTokenHash(tokenHash)
    if (row === undefined) return undefined
    const now = new Date()
    if (!isSessionLive(row, now)) {
      await this.store.sessions.delete(tokenHash)
      return undefined
    }
    const account = await this.store.accounts.findById(row.accountId)
    if (account === undefined) return undefined
    const touch = sessionTouch(row, now)
    if (touch !== undefined) await this.store.sessions.extend(tokenHash, touch.expiresAt, touch.lastSeenAt)
    return { tokenHash, account, csrfToken: row.csrfToken }
  }

  /** Starts a new session for the account (a new token at every log-in: no fixation) and sets its cookie. */
  async start (request: FastifyRequest, reply: FastifyReply, accountId: number): Promise<void> {
    // A session the browser already had (another account, another tab) ends here rather than lingering until it expires.
    const previous = request.cookies[SESSION_COOKIE]
    if (previous !== undefined && isWellFormedSessionToken(previous)) await this.store.sessions.delete(hashSessionToken(previous))
    const token = newSessionToken()
    const now = new Date()
    const userAgent = request.headers['user-agent']
    await this.store.sessions.create({
      tokenHash: hashSessionToken(token),
      accountId,
      csrfToken: newCsrfToken(),
      createdAt: now,
      expiresAt: sessionExpiry(now, now),
      clientAddress: request.ip,
      // Kept to name the browser on the sessions page: never more than that needs.
      userAgent: userAgent === undefined ? null : withoutControlCharacters(userAgent).slice(0, MAX_USER_AGENT)
    })
    reply.setCookie(SESSION_COOKIE, token, cookieOptions(request, this.policy))
    // Log-ins are rare; they clean up after sessions that simply ran out.
    await this.store.sessions.deleteExpired(now)
  }

  /** Ends the session on the server (the old cookie opens nothing any more) and clears the cookie. */
  async end (request: FastifyRequest, reply: FastifyReply, session: PortalSession | undefined): Promise<void> {
    if (session !== undefined) await this.store.sessions.delete(session.tokenHash)
    reply.clearCookie(SESSION_COOKIE, cookieOptions(request, this.policy))
  }
}
