import { linkTokenHash, newLinkToken, RESET_TOKEN_TTL_MS, sameDigest, VERIFY_TOKEN_TTL_MS } from '../core/link-tokens.js'
import type { AccountRow, AccountTokenPurpose, AccountTokenRow, NewMail, Store } from '../storage/store.js'
import { appendAuditEvent, type AuditContext } from './audit-trail.js'
import { mailLinksOf, resetMail, securityMail, signUpAttemptMail, verificationMail, type MailLinks } from './mail-messages.js'

const HOUR_MS = 60 * 60_000

/** How often the mail forms may be used: per account (resend), per email and per client address (reset). */
export const MAIL_LIMITS = Object.freeze({
  windowMs: HOUR_MS,
  resendPerAccount: 3,
  /** Messages telling an account's owner that someone signed up with its email. */
  signUpNoticePerAccount: 3,
  resetPerEmail: 3,
  resetPerAddress: 10,
  /** New passwords set through reset links, per client address and per account. */
  resetSetPerAddress: 10,
  resetSetPerAccount: 3
})

/** Where links point when no one said (the CLI with its defaults). */
export const DEFAULT_LINKS: MailLinks = mailLinksOf({ publicBaseUrl: undefined, port: 8080 })

export type MailThrottled = { outcome: 'throttled', retryAfterSeconds: number }

/** Counts one use against each subject; refused when any is over its most. */
async function countUse (store: Store, limits: ReadonlyArray<{ subject: string, max: number }>): Promise<MailThrottled | undefined> {
  const now = new Date()
  const counts = await store.loginAttempts.record(limits.map(({ subject }) => subject), now, new Date(now.getTime() - MAIL_LIMITS.windowMs))
  const over = counts.find((count, index) => count.attempts > (limits[index]?.max ?? 0))
  if (over === undefined) return undefined
  return { outcome: 'throttled', retryAfterSeconds: Math.max(1, Math.ceil((over.windowStartedAt.getTime() + MAIL_LIMITS.windowMs - now.getTime()) / 1000)) }
}

/** What sign-up hands the store: the account starts unverified, its token and message written with it. */
export function signUpVerification (links: MailLinks): { tokenHash: string, expiresAt: Date, mail: (account: AccountRow) => NewMail } {
  const { token, hash } = newLinkToken()
  return { tokenHash: hash, expiresAt: new Date(Date.now() + VERIFY_TOKEN_TTL_MS), mail: (account) => verificationMail(links, account.email, token) }
}

/**
 * Tells the owner of an account that someone signed up with its email, within the account's budget:
 * past it the sign-up is dropped without a message, so a flood of sign-ups cannot flood the owner's inbox.
 */
export async function noticeSignUpAttempt (store: Store, links: MailLinks, account: AccountRow): Promise<void> {
  const throttled = await countUse(store, [{ subject: `sign-up-existing:account:${account.id}`, max: MAIL_LIMITS.signUpNoticePerAccount }])
  if (throttled === undefined) await store.mailOutbox.enqueue(signUpAttemptMail(links, account.email))
}

/** Sends a new verification link (the earlier ones end), within the account's budget. */
export async function resendVerification (store: Store, links: MailLinks, account: AccountRow, context: AuditContext): Promise<{ outcome: 'sent' | 'verified' } | MailThrottled> {
  if (account.emailVerifiedAt !== null) return { outcome: 'verified' }
  const throttled = await countUse(store, [{ subject: `verify-resend:account:${account.id}`, max: MAIL_LIMITS.resendPerAccount }])
  if (throttled !== undefined) return throttled
  const { token, hash } = newLinkToken()
  await store.accountTokens.issue({ tokenHash: hash, accountId: account.id, purpose: 'verify', expiresAt: new Date(Date.now() + VERIFY_TOKEN_TTL_MS) }, verificationMail(links, account.email, token))
  await appendAuditEvent(store.audit, 'verification_sent', context, { accountId: account.id, detail: 'sent again on request' })
  return { outcome: 'sent' }
}

/** Why a link cannot be used, in words for the page that says so. */
export type LinkProblem = 'malformed' | 'unknown' | 'used' | 'expired'

/** The token of a link if it can be used for the purpose; otherwise why not. Looked up by digest, compared in constant time. */
export async function usableToken (store: Store, text: unknown, purpose: AccountTokenPurpose, now = new Date()): Promise<{ token: AccountTokenRow } | { problem: LinkProblem }> {
  const hash = linkTokenHash(text)
  if (hash === undefined) return { problem: 'malformed' }
  const token = await store.accountTokens.find(hash)
  if (token === undefined || !sameDigest(token.tokenHash, hash) || token.purpose !== purpose) return { problem: 'unknown' }
  if (token.usedAt !== null) return { problem: 'used' }
  if (token.expiresAt.getTime() <= now.getTime()) return { problem: 'expired' }
  return { token }
}

/** Uses a verification link: the account's email is verified. */
export async function verifyEmailWithLink (store: Store, text: unknown, context: AuditContext): Promise<{ accountId: number } | { problem: LinkProblem }> {
  const found = await usableToken(store, text, 'verify')
  if ('problem' in found) return found
  const accountId = await store.accountTokens.verifyEmail(found.token.tokenHash, new Date())
  // Used or expired between the two reads (another tab): the same answer as a used link.
  if (accountId === undefined) return { problem: 'used' }
  await appendAuditEvent(store.audit, 'email_verified', context, { accountId, detail: 'through the mailed link' })
  return { accountId }
}

/**
 * Accepts a request for a reset link. The answer (accepted or throttled) depends only on counts kept
 * for any email, existing or not; the account is looked up and the link written after the answer
 * is given (`later`), so neither the words nor the time of the answer tell whether the email has an account.
 */
export async function requestPasswordReset (
  store: Store, links: MailLinks, input: { email: string, ip: string }, later: (work: () => Promise<void>) => void
): Promise<{ outcome: 'accepted' } | MailThrottled> {
  const throttled = await countUse(store, [
    { subject: `reset:address:${input.ip}`, max: MAIL_LIMITS.resetPerAddress },
    { subject: `reset:email:${input.email}`, max: MAIL_LIMITS.resetPerEmail }
  ])
  if (throttled !== undefined) return throttled
  later(async () => {
    const account = await store.accounts.findByEmail(input.email)
    if (account === undefined) return
    const { token, hash } = newLinkToken()
    await store.accountTokens.issue({ tokenHash: hash, accountId: account.id, purpose: 'reset', expiresAt: new Date(Date.now() + RESET_TOKEN_TTL_MS) }, resetMail(links, account.email, token))
    await appendAuditEvent(store.audit, 'password_reset_requested', { actor: 'portal', address: input.ip }, { accountId: account.id })
  })
  return { outcome: 'accepted' }
}

/** Counts one new password set through a reset link against the client's address and the account. */
export async function countResetUse (store: Store, ip: string, accountId: number): Promise<MailThrottled | undefined> {
  return await countUse(store, [
    { subject: `reset-set:address:${ip}`, max: MAIL_LIMITS.resetSetPerAddress },
    { subject: `reset-set:account:${accountId}`, max: MAIL_LIMITS.resetSetPerAccount }
  ])
}

/**
 * Uses a reset link: the new password (already hashed) is set, every session of the account ends and
 * its owner is told, in one transaction; the reset is in the audit trail.
 */
export async function resetPasswordWithLink (
  store: Store, links: MailLinks, token: AccountTokenRow, passwordHash: string, context: AuditContext
): Promise<{ accountId: number, endedSessions: number } | { problem: LinkProblem }> {
  const account = await store.accounts.findById(token.accountId)
  if (account === undefined) return { problem: 'unknown' }
  const now = new Date()
  const result = await store.accountTokens.resetPassword(token.tokenHash, now, passwordHash, securityMail(links, account.email, { type: 'password_reset' }, now, context.address))
  if (result === undefined) return { problem: 'used' }
  await appendAuditEvent(store.audit, 'password_reset', context, { accountId: account.id, detail: `through the mailed link; ended ${result.endedSessions} session${result.endedSessions === 1 ? '' : 's'}` })
  return result
}

const DAY_MS = 24 * HOUR_MS
/** A key is reminded of this long before it expires (keys whose whole lifetime is shorter are not). */
export const EXPIRY_REMINDER_MS = 7 * DAY_MS

/**
 * Writes one reminder for each key that expires within EXPIRY_REMINDER_MS. Any number of instances
 * may run it at once: the store marks a key reminded and writes its message in one transaction,
 * and only the first to mark it writes one. Returns how many reminders this run wrote.
 */
export async function remindExpiringKeys (store: Store, links: MailLinks, now = new Date()): Promise<number> {
  const keys = await store.apiKeys.expiringUnreminded(now, new Date(now.getTime() + EXPIRY_REMINDER_MS), EXPIRY_REMINDER_MS, 100)
  let written = 0
  for (const key of keys) {
    const account = await store.accounts.findById(key.accountId)
    if (account === undefined || key.expiresAt === null) continue
    const mail = securityMail(links, account.email, { type: 'key_expiring', keyId: key.id, label: key.label, expiresAt: key.expiresAt }, now)
    if (!await store.apiKeys.remindExpiry(key.id, now, mail)) continue
    written++
    await store.audit.append({
      at: now, event: 'key_expiry_reminded', actor: 'api', accountId: key.accountId, keyId: key.id, address: null, detail: `expires ${key.expiresAt.toISOString()}`, once: `key_expiry_reminded:${key.id}`
    })
  }
  return written
}
