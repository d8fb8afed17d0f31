import { createHash, randomBytes, timingSafeEqual } from 'node:crypto'

/** A verification link works this long… */
export const VERIFY_TOKEN_TTL_MS = 24 * 60 * 60_000
/** …and a password reset link this long. */
export const RESET_TOKEN_TTL_MS = 60 * 60_000

const TOKEN = /^[A-Za-z0-9_-]{43}$/

/** 256 random bits for a single-use link, and the digest the database keeps in its place. */
export function newLinkToken (): { token: string, hash: string } {
  const token = randomBytes(32).toString('base64url')
  return { token, hash: hashLinkToken(token) }
}

export function hashLinkToken (token: string): string {
  return createHash('sha256').update(token).digest('hex')
}

/** The digest of a token as a link carries it; undefined for anything that is not one (tampered, cut short, padded). */
export function linkTokenHash (text: unknown): string | undefined {
  return typeof text === 'string' && TOKEN.test(text) ? hashLinkToken(text) : undefined
}

/**
 * Whether a stored digest is the one looked for, compared in constant time: the lookup by digest
 * already reveals nothing of the token, and the comparison keeps it so whatever index answered.
 */
export function sameDigest (stored: string, looked: string): boolean {
  const a = Buffer.from(stored, 'utf8')
  const b = Buffer.from(looked, 'utf8')
  return a.length === b.length && timingSafeEqual(a, b)
}
