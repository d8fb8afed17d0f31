import { accountSubject, addressSubject, LOGIN_THROTTLE, throttleVerdict } from '../core/login-throttle.js'
import { needsRehash, passwordProblem } from '../core/passwords.js'
import { DuplicateEmailError, type Store } from '../storage/store.js'
import type { PasswordHasher } from './password.js'

export type LogInResult =
  | { outcome: 'ok', accountId: number }
  /** Unknown email, account without a password, or wrong password: deliberately one outcome. */
  | { outcome: 'refused' }
  | { outcome: 'throttled', retryAfterSeconds: number }

/**
 * Checks an email (already normalised) and password. The attempt is counted against the
 * email and the address before the password is checked, so that the throttle holds
 * however many instances guess at once; a success gives those counts back.
 */
export async function logIn (store: Store, hasher: PasswordHasher, input: { email: string, password: string, ip: string }): Promise<LogInResult> {
  const now = new Date()
  const account = accountSubject(input.email)
  const address = addressSubject(input.ip)
  const [accountCount, addressCount] = await store.loginAttempts.record([account, address], now, new Date(now.getTime() - LOGIN_THROTTLE.windowMs))
  if (accountCount === undefined || addressCount === undefined) throw new Error('the attempt was not counted')
  const verdict = throttleVerdict(accountCount, addressCount, now)
  if (!verdict.allowed) return { outcome: 'throttled', retryAfterSeconds: verdict.retryAfterSeconds }

  const credentials = await store.accounts.findCredentials(input.email)
  // Unknown emails and accounts without a password are checked against a dummy hash: the same work, the same time.
  const matches = await hasher.verify(input.password, credentials?.passwordHash ?? null)
  if (!matches || credentials === undefined || credentials.passwordHash === null) return { outcome: 'refused' }

  await store.loginAttempts.clear(account)
  await store.loginAttempts.forgive(address)
  await store.loginAttempts.deleteStaleBefore(new Date(now.getTime() - LOGIN_THROTTLE.windowMs))
  if (needsRehash(credentials.passwordHash)) await store.accounts.setPasswordHash(credentials.accountId, await hasher.hash(input.password))
  return { outcome: 'ok', accountId: credentials.accountId }
}

export type SignUpResult =
  | { outcome: 'ok', accountId: number }
  | { outcome: 'invalid_password', message: string }
  | { outcome: 'duplicate' }
  | { outcome: 'throttled', retryAfterSeconds: number }

/** Creates an account with a password; each sign-up counts against the address, as it costs a hash. */
export async function signUp (store: Store, hasher: PasswordHasher, input: { email: string, password: string, ip: string }): Promise<SignUpResult> {
  const problem = passwordProblem(input.password)
  if (problem !== undefined) return { outcome: 'invalid_password', message: problem }
  const now = new Date()
  const [addressCount] = await store.loginAttempts.record([addressSubject(input.ip)], now, new Date(now.getTime() - LOGIN_THROTTLE.windowMs))
  if (addressCount === undefined) throw new Error('the attempt was not counted')
  const verdict = throttleVerdict({ attempts: 0, windowStartedAt: now }, addressCount, now)
  if (!verdict.allowed) return { outcome: 'throttled', retryAfterSeconds: verdict.retryAfterSeconds }
  if (await store.accounts.findByEmail(input.email) !== undefined) return { outcome: 'duplicate' }
  const passwordHash = await hasher.hash(input.password)
  try {
    const account = await store.accounts.create({ email: input.email, name: null, passwordHash })
    return { outcome: 'ok', accountId: account.id }
  } catch (error) {
    if (error instanceof DuplicateEmailError) return { outcome: 'duplicate' }
    throw error
  }
}
