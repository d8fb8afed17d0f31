import { controlCharacterProblem, MAX_LABEL_LENGTH, MAX_NAME_LENGTH, normalizeEmail, type TextField } from '../core/accounts.js'
import { generateApiKey, isWellFormedKeyId, KEY_CHANGE_LIMIT, keyChangeSubject, MAX_LIVE_KEYS, newKeyId, type KeyChange } from '../core/api-keys.js'
import { hashPassword, passwordProblem } from '../core/passwords.js'
import { KeyLimitError, type AccountRow, type ApiKeyRow, type RevokeResult, type Store } from '../storage/store.js'

/** A refusal whose message is meant for the person who asked. */
export class AccountsError extends Error {}

/** The account already has MAX_LIVE_KEYS live keys. */
export class LiveKeyLimitError extends AccountsError {
  constructor (readonly limit: number) {
    super(`the account has ${limit} live keys, the most an account may have; revoke one it no longer uses first`)
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
  if (account === undefined) throw new AccountsError(`no account has the email ${email}`)
  return account
}

/** Creates an account; throws DuplicateEmailError when the email is taken. */
export async function createAccount (store: Store, input: { email: string, name?: string | undefined }): Promise<AccountRow> {
  const name = textOrFail('name', input.name ?? '').trim() || null
  if (name !== null && name.length > MAX_NAME_LENGTH) throw new AccountsError(`the name must be at most ${MAX_NAME_LENGTH} characters long`)
  return store.accounts.create({ email: emailOrFail(input.email), name })
}

/** A key label as stored: trimmed, null when empty; throws AccountsError when too long or holding control characters. */
export function keyLabelOrFail (text: string | undefined): string | null {
  const label = textOrFail('label', text ?? '').trim() || null
  if (label !== null && label.length > MAX_LABEL_LENGTH) throw new AccountsError(`the label must be at most ${MAX_LABEL_LENGTH} characters long`)
  return label
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

/**
 * Generates a key for the account, within the account's budget of generations and its cap on
 * live keys (enforced by the store in the inserting transaction); the secret is in the result
 * and nowhere else.
 */
export async function issueApiKey (store: Store, accountId: number, label: string | null): Promise<{ key: string, row: ApiKeyRow }> {
  await countKeyChange(store, 'generation', accountId)
  const generated = generateApiKey()
  try {
    const row = await store.apiKeys.create({ id: newKeyId(), accountId, label, prefix: generated.prefix, hash: generated.hash }, { maxLive: MAX_LIVE_KEYS })
    return { key: generated.key, row }
  } catch (error) {
    if (error instanceof KeyLimitError) throw new LiveKeyLimitError(error.limit)
    throw error
  }
}

/** Generates a key for the account with that email; the secret is in the result and nowhere else. */
export async function createApiKey (store: Store, input: { email: string, label?: string | undefined }): Promise<{ key: string, row: ApiKeyRow, account: AccountRow }> {
  const label = keyLabelOrFail(input.label)
  const account = await accountOrFail(store, input.email)
  return { ...await issueApiKey(store, account.id, label), account }
}

/**
 * Sets the password the account logs in to the developer portal with (accounts created
 * by the CLI have none) and ends the account's portal sessions.
 */
export async function setAccountPassword (store: Store, input: { email: string, password: string }): Promise<{ account: AccountRow, endedSessions: number }> {
  const problem = controlCharacterProblem('password', input.password) ?? passwordProblem(input.password)
  if (problem !== undefined) throw new AccountsError(problem)
  const account = await accountOrFail(store, input.email)
  await store.accounts.setPasswordHash(account.id, await hashPassword(input.password))
  return { account, endedSessions: await store.sessions.deleteByAccount(account.id) }
}

export async function listApiKeys (store: Store, email: string): Promise<ApiKeyRow[]> {
  const account = await accountOrFail(store, email)
  return store.apiKeys.listByAccount(account.id)
}

/** Revokes one of the account's keys, within the account's budget of revocations (the portal). */
export async function revokeOwnApiKey (store: Store, key: ApiKeyRow): Promise<RevokeResult> {
  await countKeyChange(store, 'revocation', key.accountId)
  return store.apiKeys.revoke(key.id)
}

/**
 * Revokes any key by id (the operator's CLI). Not counted against the account's budget: an
 * operator revoking a leaked key must never be told to wait.
 */
export async function revokeApiKey (store: Store, keyId: string): Promise<RevokeResult> {
  if (!isWellFormedKeyId(keyId)) return 'unknown'
  return store.apiKeys.revoke(keyId)
}
