import { MAX_LABEL_LENGTH, normalizeEmail } from '../core/accounts.js'
import { generateApiKey, newKeyId } from '../core/api-keys.js'
import { hashPassword, passwordProblem } from '../core/passwords.js'
import type { AccountRow, ApiKeyRow, RevokeResult, Store } from '../storage/store.js'

/** A refusal whose message is meant for the person who asked. */
export class AccountsError extends Error {}

function emailOrFail (text: string): string {
  const email = normalizeEmail(text)
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
  const name = input.name?.trim() || null
  if (name !== null && name.length > 200) throw new AccountsError('the name must be at most 200 characters long')
  return store.accounts.create({ email: emailOrFail(input.email), name })
}

/** A key label as stored: trimmed, null when empty; throws AccountsError when too long. */
export function keyLabelOrFail (text: string | undefined): string | null {
  const label = text?.trim() || null
  if (label !== null && label.length > MAX_LABEL_LENGTH) throw new AccountsError(`the label must be at most ${MAX_LABEL_LENGTH} characters long`)
  return label
}

/** Generates a key for the account; the secret is in the result and nowhere else. */
export async function issueApiKey (store: Store, accountId: number, label: string | null): Promise<{ key: string, row: ApiKeyRow }> {
  const generated = generateApiKey()
  const row = await store.apiKeys.create({ id: newKeyId(), accountId, label, prefix: generated.prefix, hash: generated.hash })
  return { key: generated.key, row }
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
  const problem = passwordProblem(input.password)
  if (problem !== undefined) throw new AccountsError(problem)
  const account = await accountOrFail(store, input.email)
  await store.accounts.setPasswordHash(account.id, await hashPassword(input.password))
  return { account, endedSessions: await store.sessions.deleteByAccount(account.id) }
}

export async function listApiKeys (store: Store, email: string): Promise<ApiKeyRow[]> {
  const account = await accountOrFail(store, email)
  return store.apiKeys.listByAccount(account.id)
}

export async function revokeApiKey (store: Store, keyId: string): Promise<RevokeResult> {
  return store.apiKeys.revoke(keyId)
}
