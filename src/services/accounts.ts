import { MAX_LABEL_LENGTH, normalizeEmail } from '../core/accounts.js'
import { generateApiKey, newKeyId } from '../core/api-keys.js'
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

/** Generates a key for the account; the secret is in the result and nowhere else. */
export async function createApiKey (store: Store, input: { email: string, label?: string | undefined }): Promise<{ key: string, row: ApiKeyRow, account: AccountRow }> {
  const label = input.label?.trim() || null
  if (label !== null && label.length > MAX_LABEL_LENGTH) throw new AccountsError(`the label must be at most ${MAX_LABEL_LENGTH} characters long`)
  const account = await accountOrFail(store, input.email)
  const generated = generateApiKey()
  const row = await store.apiKeys.create({ id: newKeyId(), accountId: account.id, label, prefix: generated.prefix, hash: generated.hash })
  return { key: generated.key, row, account }
}

export async function listApiKeys (store: Store, email: string): Promise<ApiKeyRow[]> {
  const account = await accountOrFail(store, email)
  return store.apiKeys.listByAccount(account.id)
}

export async function revokeApiKey (store: Store, keyId: string): Promise<RevokeResult> {
  return store.apiKeys.revoke(keyId)
}
