import { addressSubject, codeSubject, LOGIN_THROTTLE, windowVerdict } from '../core/login-throttle.js'
import {
  isRecoveryCodeShape,
  matchingRecoveryCode,
  newRecoveryCodes,
  newTotpSecret,
  hashRecoveryCode,
  openTotpSecret,
  sealTotpSecret,
  totpStep,
  totpUri
} from '../core/two-step.js'
import { securityMailFor } from '../services/accounts.js'
import { appendAuditEvent, type AuditContext } from '../services/audit-trail.js'
import type { Store } from '../storage/store.js'
import { admitted, type Busy, type Throttled } from './log-in.js'
import type { PasswordHasher } from './password.js'

export type CodeCheck =
  | { outcome: 'ok', via: 'code' | 'recovery code', recoveryCodesLeft: number }
  /** Wrong, already used, or not a code at all: deliberately one outcome. */
  | { outcome: 'refused' }
  /** The account has no two-step verification on (an operator removed it meanwhile). */
  | { outcome: 'not_on' }
  | Throttled
  | Busy

/** The secret that seals TOTP secrets at rest, shared by every instance through the database. */
export interface TotpSealing { secret: string }

/**
 * Checks a code (from the authenticator app, or a recovery code) for the account, under the
 * throttle: the attempt is counted against the address and the account before anything is
 * checked, and runs as the address's one check in the password queue, as a log-in does. A TOTP
 * code is accepted only for a time step after the last one accepted, a recovery code only once:
 * both through a conditional write, so two instances never accept the same code.
 */
export async function checkCode (store: Store, hasher: PasswordHasher, sealing: TotpSealing, input: { accountId: number, code: string, ip: string }): Promise<CodeCheck> {
  return admitted(hasher, { ip: input.ip, kind: 'log-in' }, async (): Promise<CodeCheck> => {
    const now = new Date()
    const subject = codeSubject(input.accountId)
    const [addressCount, codeCount] = await store.loginAttempts.record([addressSubject(input.ip), subject], now, new Date(now.getTime() - LOGIN_THROTTLE.windowMs))
    if (addressCount === undefined || codeCount === undefined) throw new Error('the attempt was not counted')
    const verdict = windowVerdict([
      { by: 'address', count: addressCount, max: LOGIN_THROTTLE.maxPerAddress },
      { by: 'code', count: codeCount, max: LOGIN_THROTTLE.maxCodesPerAccount }
    ], now)
    if (!verdict.allowed) return { outcome: 'throttled', by: verdict.by, retryAfterSeconds: verdict.retryAfterSeconds }
    const row = await store.twoStep.find(input.accountId)
    const secret = row?.enabledAt == null ? undefined : openTotpSecret(sealing.secret, input.accountId, row.secretSealed)
    if (secret === undefined) return { outcome: 'not_on' }
    const accepted = await acceptedVia(store, secret, input.accountId, input.code, now)
    if (accepted === undefined) return { outcome: 'refused' }
    await store.loginAttempts.clear(subject)
    return { outcome: 'ok', via: accepted, recoveryCodesLeft: (await store.twoStep.unusedRecoveryCodes(input.accountId)).length }
  })
}

async function acceptedVia (store: Store, secret: string, accountId: number, code: string, now: Date): Promise<'code' | 'recovery code' | undefined> {
  const step = totpStep(secret, code, now)
  if (step !== undefined) return await store.twoStep.useStep(accountId, step) ? 'code' : undefined
  if (!isRecoveryCodeShape(code)) return undefined
  const hash = matchingRecoveryCode(code, await store.twoStep.unusedRecoveryCodes(accountId))
  return hash !== undefined && await store.twoStep.useRecoveryCode(accountId, hash, now) ? 'recovery code' : undefined
}

/** A setup waiting for its first code: the secret to show, and the URI its QR code carries. */
export interface PendingSetup { secret: string, uri: string }

/** Starts a setup with a new secret (replacing one not confirmed); undefined when two-step verification is already on. */
export async function startSetup (store: Store, sealing: TotpSealing, account: { id: number, email: string }): Promise<PendingSetup | undefined> {
  const secret = newTotpSecret()
  if (!await store.twoStep.startSetup(account.id, sealTotpSecret(sealing.secret, account.id, secret))) return undefined
  return { secret, uri: totpUri(secret, account.email) }
}

/** The setup waiting for its first code, if there is one. */
export async function pendingSetup (store: Store, sealing: TotpSealing, account: { id: number, email: string }): Promise<PendingSetup | undefined> {
  const row = await store.twoStep.find(account.id)
  if (row === undefined || row.enabledAt !== null) return undefined
  const secret = openTotpSecret(sealing.secret, account.id, row.secretSealed)
  return secret === undefined ? undefined : { secret, uri: totpUri(secret, account.email) }
}

export type ConfirmResult = { outcome: 'ok', recoveryCodes: string[] } | { outcome: 'wrong_code' } | { outcome: 'no_setup' }

/** Turns two-step verification on with the setup's first code; the recovery codes are returned once, stored as digests. */
export async function confirmSetup (store: Store, sealing: TotpSealing, account: { id: number }, code: string, context: AuditContext): Promise<ConfirmResult> {
  const row = await store.twoStep.find(account.id)
  if (row === undefined || row.enabledAt !== null) return { outcome: 'no_setup' }
  const secret = openTotpSecret(sealing.secret, account.id, row.secretSealed)
  if (secret === undefined) return { outcome: 'no_setup' }
  const now = new Date()
  const step = totpStep(secret, code, now)
  if (step === undefined) return { outcome: 'wrong_code' }
  const recoveryCodes = newRecoveryCodes()
  const hashes = recoveryCodes.map((shown) => hashRecoveryCode(shown.replace('-', '')))
  const mail = await securityMailFor(store, account.id, { type: 'two_step_enabled' }, context)
  if (!await store.twoStep.enable(account.id, row.secretSealed, step, now, hashes, mail)) return { outcome: 'no_setup' }
  await appendAuditEvent(store.audit, 'two_step_enabled', context, { accountId: account.id, detail: 'TOTP, with 10 recovery codes' })
  return { outcome: 'ok', recoveryCodes }
}

/** Turns two-step verification off once a current code has been accepted (checkCode); audited unless it was off already. */
export async function turnOff (store: Store, account: { id: number }, via: 'code' | 'recovery code', context: AuditContext): Promise<void> {
  if (await store.twoStep.remove(account.id, await securityMailFor(store, account.id, { type: 'two_step_disabled' }, context))) {
    await appendAuditEvent(store.audit, 'two_step_disabled', context, { accountId: account.id, detail: `confirmed with a ${via}` })
  }
}
