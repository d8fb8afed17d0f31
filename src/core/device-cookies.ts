import { createHmac, randomBytes } from 'node:crypto'
import { tokensMatch } from './csrf.js'

/**
 * OWASP's "device cookies" (Slow Down Online Guessing Attacks with Device Cookies): a browser
 * that has logged in to an account gets a cookie proving it, which exempts it from the lock an
 * attacker can put on the account's email. The cookie is `v1.<issued at, s>.<nonce>.<HMAC>`:
 * the HMAC, under a secret every instance shares, covers the issue time, the nonce and the
 * email, so a cookie counts only for the email it was issued for and cannot be forged. The
 * email itself is not in the cookie.
 */
export const DEVICE_COOKIE_MAX_AGE_MS = 365 * 24 * 60 * 60_000

const FORMAT = /^v1\.(\d{1,12})\.([A-Za-z0-9_-]{22})\.([A-Za-z0-9_-]{43})$/

function signature (secret: string, email: string, issuedAtSeconds: string, nonce: string): string {
  return createHmac('sha256', secret).update(`portal-device:${issuedAtSeconds}:${nonce}:${email}`).digest('base64url')
}

/** A fresh cookie value for a browser that has just proved it knows the email's password. */
export function newDeviceCookie (secret: string, email: string, now: Date): string {
  const issuedAt = String(Math.floor(now.getTime() / 1000))
  const nonce = randomBytes(16).toString('base64url')
  return `v1.${issuedAt}.${nonce}.${signature(secret, email, issuedAt, nonce)}`
}

/** The cookie's nonce (what the throttle counts the browser by) when it is a valid, unexpired cookie for this email. */
export function verifyDeviceCookie (secret: string, value: string | undefined, email: string, now: Date): { nonce: string } | undefined {
  const match = FORMAT.exec(value ?? '')
  if (match === null) return undefined
  const [, issuedAt = '', nonce = '', given = ''] = match
  const age = now.getTime() - Number(issuedAt) * 1000
  if (age < -60_000 || age > DEVICE_COOKIE_MAX_AGE_MS) return undefined
  return tokensMatch(signature(secret, email, issuedAt, nonce), given) ? { nonce } : undefined
}
