import { createHash, randomBytes } from 'node:crypto'

/** A session ends after this long without a request… */
export const SESSION_IDLE_MS = 2 * 60 * 60_000
/** …and in any case this long after log-in (OWASP Session Management Cheat Sheet: idle and absolute timeouts). */
export const SESSION_ABSOLUTE_MS = 12 * 60 * 60_000
/** The expiry is moved at most once a minute, so page views do not all become writes. */
const EXTEND_STEP_MS = 60_000

const TOKEN = /^[A-Za-z0-9_-]{43}$/

/** 256 random bits for the cookie; only its digest is stored. */
export function newSessionToken (): string {
  return randomBytes(32).toString('base64url')
}

export function isWellFormedSessionToken (text: string): boolean {
  return TOKEN.test(text)
}

/** The database keeps this digest, so a copy of the sessions table opens no session. */
export function hashSessionToken (token: string): string {
  return createHash('sha256').update(token).digest('hex')
}

/** The expiry of a session created at createdAt and last used at now. */
export function sessionExpiry (createdAt: Date, now: Date): Date {
  return new Date(Math.min(createdAt.getTime() + SESSION_ABSOLUTE_MS, now.getTime() + SESSION_IDLE_MS))
}

export function isSessionLive (session: { expiresAt: Date }, now: Date): boolean {
  return now.getTime() < session.expiresAt.getTime()
}

/**
 * What a request at now writes to its session (a later expiry, the time it was last seen), or
 * undefined when the stored record is recent enough to keep: at most one write a minute per session.
 */
export function sessionTouch (session: { createdAt: Date, expiresAt: Date, lastSeenAt: Date | null }, now: Date): { expiresAt: Date, lastSeenAt: Date } | undefined {
  const expiresAt = extendedExpiry(session, now)
  const seenLongAgo = session.lastSeenAt === null || now.getTime() - session.lastSeenAt.getTime() >= EXTEND_STEP_MS
  return expiresAt === undefined && !seenLongAgo ? undefined : { expiresAt: expiresAt ?? session.expiresAt, lastSeenAt: now }
}

/** How the sessions page names a session in its forms: a digest of the token's digest, which opens nothing. */
export function sessionHandle (tokenHash: string): string {
  return createHash('sha256').update(`session handle\0${tokenHash}`).digest('hex').slice(0, 32)
}

export const isWellFormedSessionHandle = (text: string): boolean => /^[0-9a-f]{32}$/.test(text)

/** The new expiry after a request at now, or undefined when the stored one is recent enough to keep. */
export function extendedExpiry (session: { createdAt: Date, expiresAt: Date }, now: Date): Date | undefined {
  const next = sessionExpiry(session.createdAt, now)
  return next.getTime() - session.expiresAt.getTime() >= EXTEND_STEP_MS ? next : undefined
}
