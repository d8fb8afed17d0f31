import { newDeviceCookie, verifyDeviceCookie } from '../core/device-cookies.js'
import {
  accountSubject,
  addressSubject,
  deviceSubject,
  LOGIN_THROTTLE,
  lockedVerdict,
  pairSubject,
  unknownDeviceLockMs,
  windowVerdict,
  type ThrottledBy
} from '../core/login-throttle.js'
import { needsRehash, passwordProblem } from '../core/passwords.js'
import { noticeSignUpAttempt, signUpVerification } from '../services/account-mail.js'
import { appendAuditEvent, type AuditContext } from '../services/audit-trail.js'
import type { MailLinks } from '../services/mail-messages.js'
import { DuplicateEmailError, type Store } from '../storage/store.js'
import { PasswordHasherBusyError, type BusyReason, type PasswordClient, type PasswordHasher, type PasswordWork } from './password.js'

export type Throttled = { outcome: 'throttled', by: ThrottledBy, retryAfterSeconds: number }
/** The password hasher had no place for this client: refused before the throttle counted anything. */
export type Busy = { outcome: 'busy', reason: BusyReason, retryAfterSeconds: number }

export type LogInResult =
  /** `deviceCookie`: a fresh device cookie for the browser, bound to the email. */
  | { outcome: 'ok', accountId: number, deviceCookie: string }
  /** The password is right and the account has two-step verification on: a code must follow (src/portal/two-step.ts). */
  | { outcome: 'second_step', accountId: number, deviceCookie: string }
  /** Unknown email, account without a password, or wrong password: deliberately one outcome. */
  | { outcome: 'refused' }
  | Throttled
  | Busy

export interface LogInInput {
  /** Already normalised. */
  email: string
  password: string
  ip: string
  /** The device cookie the browser sent, if any. */
  deviceCookie: string | undefined
}

/** The secret device cookies are signed with; every instance shares it. */
export interface DeviceCookieSecret { secret: string }

/** Runs the work as the address's one password check, or answers that there is no place for it. */
export async function admitted<T> (hasher: PasswordHasher, client: PasswordClient, work: (passwords: PasswordWork) => Promise<T>): Promise<T | Busy> {
  try {
    return await hasher.forClient(client, work)
  } catch (error) {
    if (error instanceof PasswordHasherBusyError) return { outcome: 'busy', reason: error.reason, retryAfterSeconds: error.retryAfterSeconds }
    throw error
  }
}

/**
 * Checks an email and password under the policy of LOGIN_THROTTLE. The attempt is counted
 * before the password is checked, so that the throttle holds however many instances guess at
 * once; a success gives the counts of its own browser or network back.
 */
export async function logIn (store: Store, hasher: PasswordHasher, devices: DeviceCookieSecret, input: LogInInput): Promise<LogInResult> {
  // A browser that has logged in to this email before has places kept for it in the queue.
  const device = verifyDeviceCookie(devices.secret, input.deviceCookie, input.email, new Date())
  return admitted(hasher, { ip: input.ip, kind: device === undefined ? 'log-in' : 'known-device' }, async (passwords): Promise<LogInResult> => {
    const now = new Date()
    const address = addressSubject(input.ip)
    const own = device === undefined ? pairSubject(input.email, input.ip) : deviceSubject(device.nonce)
    const [addressCount, ownCount] = await store.loginAttempts.record([address, own], now, new Date(now.getTime() - LOGIN_THROTTLE.windowMs))
    if (addressCount === undefined || ownCount === undefined) throw new Error('the attempt was not counted')
    const verdict = windowVerdict([
      { by: 'address', count: addressCount, max: LOGIN_THROTTLE.maxPerAddress },
      device === undefined
        ? { by: 'pair', count: ownCount, max: LOGIN_THROTTLE.maxPerPair }
        : { by: 'device', count: ownCount, max: LOGIN_THROTTLE.maxPerDevice }
    ], now)
    if (!verdict.allowed) return { outcome: 'throttled', by: verdict.by, retryAfterSeconds: verdict.retryAfterSeconds }
    const account = accountSubject(input.email)
    if (device === undefined) {
      const lock = await store.loginAttempts.recordUnlessLocked(account, now, {
        forgetBefore: new Date(now.getTime() - LOGIN_THROTTLE.forgetAfterMs),
        lockMsAfter: unknownDeviceLockMs
      })
      if (!lock.allowed) return { outcome: 'throttled', ...lockedVerdict(lock.lockedUntil, now) }
    }

    const credentials = await store.accounts.findCredentials(input.email)
    // Unknown emails and accounts without a password are checked against a dummy hash: the same work, the same time.
    const matches = await passwords.verify(input.password, credentials?.passwordHash ?? null)
    const context: AuditContext = { actor: 'portal', address: input.ip }
    if (!matches || credentials === undefined || credentials.passwordHash === null) {
      // Recorded on the account it was aimed at, so its owner sees it; an unknown email has no account to record it on.
      // One small write beside a password hash: it tells no one which emails exist. Never the password, of course.
      if (credentials !== undefined) {
        await appendAuditEvent(store.audit, 'login_failed', context, {
          accountId: credentials.accountId, detail: credentials.passwordHash === null ? 'the account has no password' : 'wrong password'
        })
      }
      return { outcome: 'refused' }
    }

    await store.loginAttempts.clear(own)
    // A log-in from a known browser leaves the unknown-device lock alone: it may be holding an attacker back.
    if (device === undefined) await store.loginAttempts.clear(account)
    await store.loginAttempts.forgive(address)
    await store.loginAttempts.deleteStaleBefore(new Date(now.getTime() - LOGIN_THROTTLE.forgetAfterMs))
    if (needsRehash(credentials.passwordHash, hasher.params)) await store.accounts.setPasswordHash(credentials.accountId, await passwords.hash(input.password))
    const deviceCookie = newDeviceCookie(devices.secret, input.email, now)
    // The log-in is recorded once its code is accepted.
    if ((await store.twoStep.find(credentials.accountId))?.enabledAt != null) return { outcome: 'second_step', accountId: credentials.accountId, deviceCookie }
    await appendAuditEvent(store.audit, 'login_succeeded', context, {
      accountId: credentials.accountId, detail: device === undefined ? 'from a browser not seen before' : 'from a browser that logged in before'
    })
    return { outcome: 'ok', accountId: credentials.accountId, deviceCookie }
  })
}

export type SignUpResult =
  /** The same outcome whether or not the email has an account: what differs happens after the answer. */
  | { outcome: 'accepted' }
  | { outcome: 'invalid_password', message: string }
  | Throttled
  | Busy

export interface SignUpInput {
  /** Already normalised. */
  email: string
  password: string
  ip: string
}

/**
 * Accepts a sign-up; each counts against the address, as it costs a hash. The password is hashed
 * whatever the email, so the answer takes as long for an email with an account as for a new one;
 * the account is looked up and made (or its owner told) in `later`, after the answer is given.
 */
export async function signUp (store: Store, hasher: PasswordHasher, links: MailLinks, input: SignUpInput, later: (work: () => Promise<void>) => void): Promise<SignUpResult> {
  const problem = passwordProblem(input.password)
  if (problem !== undefined) return { outcome: 'invalid_password', message: problem }
  return admitted(hasher, { ip: input.ip, kind: 'sign-up' }, async (passwords): Promise<SignUpResult> => {
    const now = new Date()
    const [addressCount] = await store.loginAttempts.record([addressSubject(input.ip)], now, new Date(now.getTime() - LOGIN_THROTTLE.windowMs))
    if (addressCount === undefined) throw new Error('the attempt was not counted')
    const verdict = windowVerdict([{ by: 'address', count: addressCount, max: LOGIN_THROTTLE.maxPerAddress }], now)
    if (!verdict.allowed) return { outcome: 'throttled', by: verdict.by, retryAfterSeconds: verdict.retryAfterSeconds }
    const passwordHash = await passwords.hash(input.password)
    later(async () => { await createOrNotice(store, links, input, passwordHash) })
    return { outcome: 'accepted' }
  })
}

/** Makes the account, unverified, with its verification message; or, when the email has one, mails its owner instead. */
async function createOrNotice (store: Store, links: MailLinks, input: SignUpInput, passwordHash: string): Promise<void> {
  const existing = await store.accounts.findByEmail(input.email)
  if (existing !== undefined) return await noticeSignUpAttempt(store, links, existing)
  try {
    // Unverified until its owner follows the link, whose message is written in the same transaction.
    const account = await store.accounts.create({ email: input.email, name: null, passwordHash, verification: signUpVerification(links) })
    const context: AuditContext = { actor: 'portal', address: input.ip }
    await appendAuditEvent(store.audit, 'account_created', context, { accountId: account.id, detail: 'signed up in the portal' })
    await appendAuditEvent(store.audit, 'password_set', context, { accountId: account.id })
    await appendAuditEvent(store.audit, 'verification_sent', context, { accountId: account.id, detail: 'at sign-up' })
  } catch (error) {
    if (!(error instanceof DuplicateEmailError)) throw error
    // Another sign-up with the same email made the account first: its owner is told, as above.
    const raced = await store.accounts.findByEmail(input.email)
    if (raced !== undefined) await noticeSignUpAttempt(store, links, raced)
  }
}
