import { createHash, createHmac, randomBytes, timingSafeEqual } from 'node:crypto'

const TOKEN = /^[A-Za-z0-9_-]{43}$/

/** 256 random bits: a session's synchronizer token, or the nonce of a pre-session cookie. */
export function newCsrfToken (): string {
  return randomBytes(32).toString('base64url')
}

export function isWellFormedCsrfToken (text: string): boolean {
  return TOKEN.test(text)
}

/**
 * The form token for a pre-session nonce (the sign-up and log-in forms, before any session
 * exists): an HMAC of the nonce kept in a cookie (OWASP's signed double-submit cookie).
 * A site that cannot read the cookie cannot compute it, and a nonce planted without the
 * server's secret has no valid token.
 */
export function presessionToken (secret: string, nonce: string): string {
  return createHmac('sha256', secret).update(`portal-presession:${nonce}`).digest('base64url')
}

/** Constant-time equality of an expected token and whatever the form sent (any length, any type). */
export function tokensMatch (expected: string, given: unknown): boolean {
  if (typeof given !== 'string' || given === '') return false
  // Digests have equal lengths, so timingSafeEqual never throws and the length leaks nothing.
  const digest = (text: string): Buffer => createHash('sha256').update(text).digest()
  return timingSafeEqual(digest(expected), digest(given)) && expected === given
}
