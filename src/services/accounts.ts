import { controlCharacterProblem, MAX_LABEL_LENGTH, MAX_NAME_LENGTH, normalizeEmail, type TextField } from '../core/accounts.js'
import {
  DEFAULT_ROLL_GRACE_MS,
  DEFAULT_SCOPES,
  generateApiKey,
  isWellFormedKeyId,
  KEY_CHANGE_LIMIT,
  keyChangeSubject,
  MAX_KEY_DURATION_MS,
  MAX_LIVE_KEYS,
  newKeyId,
  parseDuration,
  parseZonedTime,
  parseScopes,
  type KeyChange,
  type KeyMode,
  type Scope
} from '../core/api-keys.js'
import { SANDBOX_SEED } from '../core/demo-pets.js'
import { hashPassword, passwordProblem, type ScryptParams } from '../core/passwords.js'
import { KeyLimitError, type AccountRow, type ApiKeyRow, type NewMail, type RevokeResult, type Store } from '../storage/store.js'
import { DEFAULT_LINKS } from './account-mail.js'
import { appendAuditEvent, type AuditContext } from './audit-trail.js'
import { securityMail, type SecurityEvent } from './mail-messages.js'

/** Who acts when no one else is named: an operator at the command line. */
const OPERATOR: AuditContext = { actor: 'cli' }

/** A refusal whose message is meant for the person who asked. */
export class AccountsError extends Error {}

/** The account already has MAX_LIVE_KEYS live keys. */
export class LiveKeyLimitError extends AccountsError {
  constructor (readonly limit: number) {
    super(`the account has ${limit} live keys, the most an account may have (a rolled key counts until its grace period ends); revoke one it no longer uses first`)
  }
}

/** The account has used up its key generations (or revocations) for the current window. */
export class KeyChangeRateError extends AccountsError {
  constructor (readonly change: KeyChange, readonly retryAfterSeconds: number) {
    const minutes = Math.max(1, Math.ceil(retryAfterSeconds / 60))
    super(`the account has made ${KEY_CHANGE_LIMIT.maxPerWindow} key ${change}s in the last hour, the most allowed; try again in ${minutes} minute${minutes === 1 ? '' : 's'}`)
  }
}

/** Refuses a text with control characters, naming the field: every text a person gives the portal or the CLI passes here. */
export function textOrFail (field: TextField, text: string): string {
  const problem = controlCharacterProblem(field, text)
  if (problem !== undefined) throw new AccountsError(problem)
  return text
}

function emailOrFail (text: string): string {
  const email = normalizeEmail(textOrFail('email', text))
  if (email === undefined) throw new AccountsError(`${JSON.stringify(text)} is not a valid email address`)
  return email
}

async function accountOrFail (store: Store, emailText: string): Promise<AccountRow> {
  const email = emailOrFail(emailText)
  const account = await store.accounts.findByEmail(email)
  if (account === undefined) throw new AccountsError(`no account has the email ${email}: create it with animal-store accounts create --email ${email}`)
  return account
}

/** Marks the account's email verified by hand: an operator vouches for it (accounts made by the CLI are verified already). */
export async function verifyAccountEmail (store: Store, emailText: string, context: AuditContext = OPERATOR): Promise<{ account: AccountRow, already: boolean }> {
  const account = await accountOrFail(store, emailText)
  if (account.emailVerifiedAt !== null) return { account, already: true }
  await store.accounts.markEmailVerified(account.id, new Date())
  await appendAuditEvent(store.audit, 'email_verified', context, { accountId: account.id, detail: 'vouched for by an operator' })
  return { account, already: false }
}

/** Creates an account; throws DuplicateEmailError when the email is taken. */
export async function createAccount (store: Store, input: { email: string, name?: string | undefined }, context: AuditContext = OPERATOR): Promise<AccountRow> {
  const name = textOrFail('name', input.name ?? '').trim() || null
  if (name !== null && name.length > MAX_NAME_LENGTH) throw new AccountsError(`the name must be at most ${MAX_NAME_LENGTH} characters long`)
  const account = await store.accounts.create({ email: emailOrFail(input.email), name })
  await appendAuditEvent(store.audit, 'account_created', context, { accountId: account.id })
  return account
}

/** A key label as stored: trimmed, null when empty; throws AccountsError when too long or holding control characters. */
export function keyLabelOrFail (text: string | undefined): string | null {
  const label = textOrFail('label', text ?? '').trim() || null
  if (label !== null && label.length > MAX_LABEL_LENGTH) throw new AccountsError(`the label must be at most ${MAX_LABEL_LENGTH} characters long`)
  return label
}

/** The security message to the account's owner for the event; undefined when the account is gone. */
export async function securityMailFor (store: Store, accountId: number, event: SecurityEvent, context: AuditContext): Promise<NewMail | undefined> {
  const account = await store.accounts.findById(accountId)
  return account && securityMail(context.links ?? DEFAULT_LINKS, account.email, event, new Date(), context.address)
}

/** Counts one change of the account's keys; throws KeyChangeRateError once the window's budget is spent. */
async function countKeyChange (store: Store, change: KeyChange, accountId: number): Promise<void> {
  const now = new Date()
  const [count] = await store.loginAttempts.record([keyChangeSubject(change, accountId)], now, new Date(now.getTime() - KEY_CHANGE_LIMIT.windowMs))
  if (count === undefined) throw new Error('the key change was not counted')
  if (count.attempts > KEY_CHANGE_LIMIT.maxPerWindow) {
    const reopensAt = count.windowStartedAt.getTime() + KEY_CHANGE_LIMIT.windowMs
    throw new KeyChangeRateError(change, Math.max(1, Math.ceil((reopensAt - now.getTime()) / 1000)))
  }
}

/** What a new key may do and until when; each absent part takes its default (both scopes, no expiry). */
export interface KeyTerms {
  scopes?: readonly Scope[] | undefined
  expiresAt?: Date | null | undefined
  /** 'live' when absent; a test key reads and writes its account's sandbox (test mode). */
  mode?: KeyMode | undefined
}

/** A key's scopes from a comma-separated list; throws AccountsError naming an unknown scope. */
export function scopesOrFail (text: string): Scope[] {
  const parsed = parseScopes(textOrFail('scopes', text))
  if ('problem' in parsed) throw new AccountsError(parsed.problem)
  return parsed.scopes
}

/** A duration such as 30m, 12h or 90d in milliseconds; throws AccountsError otherwise. */
export function durationOrFail (text: string, what: string): number {
  const parsed = parseDuration(textOrFail('duration', text))
  if ('problem' in parsed) throw new AccountsError(`${what}: ${parsed.problem}`)
  return parsed.ms
}

/**
 * When a new key expires: `expiresIn` (a duration) from now, or `expiresAt` (an ISO 8601 time), or
 * never. Throws AccountsError for both at once, a time that is not in the future, or beyond ten years.
 */
export function expiryOrFail (input: { expiresIn?: string | undefined, expiresAt?: string | undefined }, now = Date.now()): Date | null {
  if (input.expiresIn !== undefined && input.expiresAt !== undefined) throw new AccountsError('give an expiry as a duration or as a time, not both')
  if (input.expiresIn !== undefined) {
    const ms = durationOrFail(input.expiresIn, 'the expiry')
    if (ms === 0) throw new AccountsError('the expiry must be in the future: give a duration such as 30m, 12h or 90d')
    return new Date(now + ms)
  }
  if (input.expiresAt === undefined) return null
  const text = textOrFail('expiry', input.expiresAt).trim()
  const at = parseZonedTime(text)
  if (Number.isNaN(at)) throw new AccountsError(`${JSON.stringify(input.expiresAt)} is not an ISO 8601 time with a zone, such as 2027-01-31T18:00:00Z`)
  if (at <= now) throw new AccountsError(`the expiry ${new Date(at).toISOString()} is not in the future`)
  if (at - now > MAX_KEY_DURATION_MS) throw new AccountsError('the expiry is more than ten years away')
  return new Date(at)
}

function describeTerms (row: ApiKeyRow): string {
  return `${row.mode === 'test' ? 'test key; ' : ''}scopes ${row.scopes.join(' ')}; ${row.expiresAt === null ? 'no expiry' : `expires ${row.expiresAt.toISOString()}`}`
}

/**
 * Generates a key for the account, within the account's budget of generations and its cap on
 * live keys (enforced by the store in the inserting transaction); the secret is in the result
 * and nowhere else.
 */
export async function issueApiKey (store: Store, accountId: number, label: string | null, terms: KeyTerms, context: AuditContext = OPERATOR): Promise<{ key: string, row: ApiKeyRow }> {
  await countKeyChange(store, 'generation', accountId)
  const mode = terms.mode ?? 'live'
  const generated = generateApiKey(mode)
  const id = newKeyId()
  const mail = await securityMailFor(store, accountId, { type: 'key_created', keyId: id, label }, context)
  try {
    const row = await store.apiKeys.create({
      id, accountId, label, prefix: generated.prefix, hash: generated.hash, scopes: terms.scopes ?? DEFAULT_SCOPES, expiresAt: terms.expiresAt ?? null, mode
    }, { maxLive: MAX_LIVE_KEYS }, mail)
    // A sandbox is there before its first test key is: the key's first request shows the demo catalogue.
    if (mode === 'test') await store.sandbox.ensureSeeded(accountId, SANDBOX_SEED)
    await appendAuditEvent(store.audit, 'key_created', context, { accountId, keyId: row.id, detail: describeTerms(row) })
    return { key: generated.key, row }
  } catch (error) {
    if (error instanceof KeyLimitError) throw new LiveKeyLimitError(error.limit)
    throw error
  }
}

/** Generates a key for the account with that email; the secret is in the result and nowhere else. */
export async function createApiKey (store: Store, input: { email: string, label?: string | undefined } & KeyTerms, context: AuditContext = OPERATOR): Promise<{ key: string, row: ApiKeyRow, account: AccountRow }> {
  const label = keyLabelOrFail(input.label)
  const account = await accountOrFail(store, input.email)
  return { ...await issueApiKey(store, account.id, label, input, context), account }
}

/**
 * Rolls a live key: a new key with the same label and scopes (and lifetime), while the old one keeps
 * working for `graceMs` (DEFAULT_ROLL_GRACE_MS by default; 0 ends it at once). Counted as a key
 * generation; the old key counts toward the cap until it expires. `ownerId` limits it to one
 * account's keys (the portal).
 */
export async function rollApiKey (store: Store, keyId: string, options: { graceMs?: number | undefined, ownerId?: number, mode?: KeyMode | undefined }, context: AuditContext = OPERATOR): Promise<{ key: string, row: ApiKeyRow, old: ApiKeyRow }> {
  const existing = isWellFormedKeyId(keyId) ? await store.apiKeys.findById(keyId) : undefined
  if (existing === undefined || (options.ownerId !== undefined && existing.accountId !== options.ownerId)) throw new AccountsError(`no key has the id ${keyId}`)
  if (!existing.live) throw new AccountsError(`key ${keyId} is ${existing.revokedAt !== null ? 'revoked' : 'expired'} already: there is nothing to roll; create a new key instead`)
  // A second roll in the grace period would give the key a second replacement, whose lifetime would
  // be taken from the shortened one of the old key: what is meant is its replacement.
  if (existing.rolledTo !== null) {
    throw new AccountsError(`key ${keyId} was rolled already and is in its grace period: roll its replacement ${existing.rolledTo} instead, or revoke ${keyId} to end it now`)
  }
  await countKeyChange(store, 'generation', existing.accountId)
  const graceMs = options.graceMs ?? DEFAULT_ROLL_GRACE_MS
  const mode = options.mode ?? existing.mode
  const generated = generateApiKey(mode)
  const successorId = newKeyId()
  const mail = await securityMailFor(store, existing.accountId, { type: 'key_rolled', keyId, successorId }, context)
  let result
  try {
    result = await store.apiKeys.roll(keyId, { id: successorId, prefix: generated.prefix, hash: generated.hash, mode }, { graceMs, maxLive: MAX_LIVE_KEYS, mail })
    if (mode === 'test') await store.sandbox.ensureSeeded(existing.accountId, SANDBOX_SEED)
  } catch (error) {
    if (error instanceof KeyLimitError) throw new LiveKeyLimitError(error.limit)
    throw error
  }
  if (result.outcome === 'unknown') throw new AccountsError(`no key has the id ${keyId}`)
  if (result.outcome === 'ended') throw new AccountsError(`key ${keyId} has ended already: there is nothing to roll; create a new key instead`)
  await appendAuditEvent(store.audit, 'key_rolled', context, {
    accountId: result.old.accountId, keyId, detail: `replaced by ${result.key.id}${mode === 'test' ? ' (test key)' : ''}; works until ${result.old.expiresAt?.toISOString() ?? 'now'}`
  })
  return { key: generated.key, row: result.key, old: result.old }
}

/**
 * Sets the password the account logs in to the developer portal with (accounts created
 * by the CLI have none), hashed at `params` (PASSWORD_HASH_COST), and ends the account's portal sessions.
 */
export async function setAccountPassword (store: Store, input: { email: string, password: string, params: Readonly<ScryptParams> }, context: AuditContext = OPERATOR): Promise<{ account: AccountRow, endedSessions: number }> {
  const problem = controlCharacterProblem('password', input.password) ?? passwordProblem(input.password)
  if (problem !== undefined) throw new AccountsError(problem)
  const account = await accountOrFail(store, input.email)
  await store.accounts.setPasswordHash(account.id, await hashPassword(input.password, input.params), await securityMailFor(store, account.id, { type: 'password_changed' }, context))
  await appendAuditEvent(store.audit, 'password_set', context, { accountId: account.id })
  return { account, endedSessions: await store.sessions.deleteByAccount(account.id) }
}

/**
 * Removes the account's two-step verification (its TOTP secret and recovery codes), for a
 * developer who lost their authenticator; false when it was not set up. Audited as turned off.
 */
export async function resetTwoStep (store: Store, email: string, context: AuditContext = OPERATOR): Promise<{ account: AccountRow, removed: boolean }> {
  const account = await accountOrFail(store, email)
  const removed = await store.twoStep.remove(account.id, await securityMailFor(store, account.id, { type: 'two_step_disabled' }, context))
  if (removed) await appendAuditEvent(store.audit, 'two_step_disabled', context, { accountId: account.id, detail: 'removed by an operator' })
  return { account, removed }
}

export async function listApiKeys (store: Store, email: string): Promise<ApiKeyRow[]> {
  const account = await accountOrFail(store, email)
  return store.apiKeys.listByAccount(account.id)
}

async function revoked (store: Store, key: Pick<ApiKeyRow, 'id' | 'accountId'>, context: AuditContext = OPERATOR): Promise<RevokeResult> {
  const result = await store.apiKeys.revoke(key.id)
  if (result === 'revoked') await appendAuditEvent(store.audit, 'key_revoked', context, { accountId: key.accountId, keyId: key.id })
  return result
}

/** Revokes one of the account's keys, within the account's budget of revocations (the portal). */
export async function revokeOwnApiKey (store: Store, key: ApiKeyRow, context: AuditContext = OPERATOR): Promise<RevokeResult> {
  await countKeyChange(store, 'revocation', key.accountId)
  return revoked(store, key, context)
}

/**
 * Revokes any key by id (the operator's CLI). Not counted against the account's budget: an
 * operator revoking a leaked key must never be told to wait.
 */
export async function revokeApiKey (store: Store, keyId: string, context: AuditContext = OPERATOR): Promise<RevokeResult> {
  const key = isWellFormedKeyId(keyId) ? await store.apiKeys.findById(keyId) : undefined
  if (key === undefined) return 'unknown'
  return revoked(store, key, context)
}

/** The account's audit events, newest first (the CLI's `audit`). */
export async function accountAuditEvents (store: Store, email: string, query: { limit: number, beforeId?: number }): Promise<{ account: AccountRow, events: Awaited<ReturnType<Store['audit']['page']>> }> {
  const account = await accountOrFail(store, email)
  return { account, events: await store.audit.page(account.id, query) }
}

/** The key's usage counts for the last `days` days (the CLI's `keys usage`, the portal's chart). */
export async function keyUsageSince (store: Store, keyId: string, days: number, now = Date.now()): Promise<{ key: ApiKeyRow, since: Date, counts: Awaited<ReturnType<Store['keyUsage']['forKey']>> }> {
  const key = isWellFormedKeyId(keyId) ? await store.apiKeys.findById(keyId) : undefined
  if (key === undefined) throw new AccountsError(`no key has the id ${keyId}`)
  const hour = 3_600_000
  const since = new Date(now - (now % hour) - (days * 24 - 1) * hour)
  return { key, since, counts: await store.keyUsage.forKey(keyId, since) }
}

/**
 * Empties the account's sandbox and seeds it again with the demo catalogue (test mode), and records
 * who did it in the audit trail. `sandbox` is the serving instance's catalogue, which forgets the old
 * sandbox at once; other instances (and every instance, after the CLI's reset) follow the store's feed of resets.
 */
export async function resetSandbox (store: Store, accountId: number, context: AuditContext = OPERATOR, sandbox?: { reset: (accountId: number) => Promise<void> }): Promise<void> {
  if (sandbox !== undefined) await sandbox.reset(accountId)
  else await store.sandbox.reset(accountId, SANDBOX_SEED)
  await appendAuditEvent(store.audit, 'sandbox_reset', context, { accountId })
}

/** resetSandbox for the account with that email (the CLI's `sandbox reset`). */
export async function resetSandboxOf (store: Store, email: string, context: AuditContext = OPERATOR): Promise<AccountRow> {
  const account = await accountOrFail(store, email)
  await resetSandbox(store, account.id, context)
  return account
}
