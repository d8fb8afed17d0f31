import { createCipheriv, createDecipheriv, createHash, createHmac, randomBytes, randomInt, timingSafeEqual } from 'node:crypto'
import { Secret, TOTP } from 'otpauth'

/**
 * Two-step verification: TOTP as RFC 6238 sets it out and authenticator apps expect it (SHA-1,
 * six digits, 30-second steps), with ten single-use recovery codes.
 */
export const TWO_STEP = Object.freeze({
  issuer: 'Animal Store',
  digits: 6,
  periodSeconds: 30,
  /** A code of the step before or after the current one is accepted too: clocks drift, people type slowly (RFC 6238 section 5.2). */
  window: 1,
  secretBytes: 20,
  recoveryCodes: 10,
  /** Each recovery code is 10 characters of base32: 50 random bits, beyond guessing within the throttle. */
  recoveryCodeLength: 10,
  /** What the code field takes at most: a recovery code with its hyphen and a few spaces. */
  maxCodeInput: 32
})

const BASE32 = 'abcdefghijklmnopqrstuvwxyz234567'
const IV_BYTES = 12
const TAG_BYTES = 16

export function newTotpSecret (): string {
  return new Secret({ size: TWO_STEP.secretBytes }).base32
}

function totpOf (secretBase32: string, email: string): TOTP {
  return new TOTP({
    issuer: TWO_STEP.issuer,
    label: email,
    algorithm: 'SHA1',
    digits: TWO_STEP.digits,
    period: TWO_STEP.periodSeconds,
    secret: Secret.fromBase32(secretBase32)
  })
}

/** The otpauth:// URI an authenticator app reads from the QR code. */
export function totpUri (secretBase32: string, email: string): string {
  return totpOf(secretBase32, email).toString()
}

/** The secret as people type it into an app: groups of four. */
export const groupedSecret = (secretBase32: string): string => secretBase32.replace(/(.{4})(?=.)/g, '$1 ')

/** What was typed in the code field, without the spaces and hyphens people add; undefined when it is too long to be a code. */
export function normalizedCode (text: string): string | undefined {
  if (text.length > TWO_STEP.maxCodeInput) return undefined
  return text.replace(/[\s-]/g, '').toLowerCase()
}

export const isTotpCode = (code: string): boolean => new RegExp(`^\\d{${TWO_STEP.digits}}$`).test(code)
export const isRecoveryCodeShape = (code: string): boolean => new RegExp(`^[${BASE32}]{${TWO_STEP.recoveryCodeLength}}$`).test(code)

/**
 * The time step a TOTP code belongs to, when it is valid now (within the window), else undefined.
 * otpauth compares each candidate code in constant time.
 */
export function totpStep (secretBase32: string, code: string, now: Date): number | undefined {
  if (!isTotpCode(code)) return undefined
  const totp = totpOf(secretBase32, '')
  const delta = totp.validate({ token: code, timestamp: now.getTime(), window: TWO_STEP.window })
  return delta === null ? undefined : totp.counter({ timestamp: now.getTime() }) + delta
}

/** Ten recovery codes as shown (two groups of five, hyphenated), each from the CSPRNG. */
export function newRecoveryCodes (): string[] {
  return Array.from({ length: TWO_STEP.recoveryCodes }, () => {
    const code = Array.from({ length: TWO_STEP.recoveryCodeLength }, () => BASE32[randomInt(BASE32.length)]).join('')
    return `${code.slice(0, 5)}-${code.slice(5)}`
  })
}

/** The digest stored for a recovery code (normalised): 50 random bits need no slow hash. */
export function hashRecoveryCode (code: string): string {
  return createHash('sha256').update(`recovery code\0${code}`).digest('hex')
}

/** The stored digest among `hashes` that the code matches, comparing with every one in constant time. */
export function matchingRecoveryCode (code: string, hashes: readonly string[]): string | undefined {
  const given = Buffer.from(hashRecoveryCode(code), 'hex')
  let found: string | undefined
  for (const hash of hashes) {
    const stored = Buffer.from(hash, 'hex')
    if (stored.length === given.length && timingSafeEqual(stored, given)) found = hash
  }
  return found
}

/**
 * Seals a TOTP secret for the database with AES-256-GCM, under a key derived from the
 * installation's sealing secret and the account id: a sealed secret opens for its own account
 * only, and a copy of the two_step table alone opens nothing.
 */
export function sealTotpSecret (sealingSecret: string, accountId: number, secretBase32: string): string {
  const iv = randomBytes(IV_BYTES)
  const cipher = createCipheriv('aes-256-gcm', sealingKey(sealingSecret, accountId), iv)
  const sealed = Buffer.concat([cipher.update(secretBase32, 'utf8'), cipher.final()])
  return Buffer.concat([iv, cipher.getAuthTag(), sealed]).toString('base64url')
}

/** The secret sealed by sealTotpSecret; undefined when it does not open (another account's, tampered). */
export function openTotpSecret (sealingSecret: string, accountId: number, sealed: string): string | undefined {
  const bytes = Buffer.from(sealed, 'base64url')
  if (bytes.length <= IV_BYTES + TAG_BYTES) return undefined
  try {
    const decipher = createDecipheriv('aes-256-gcm', sealingKey(sealingSecret, accountId), bytes.subarray(0, IV_BYTES))
    decipher.setAuthTag(bytes.subarray(IV_BYTES, IV_BYTES + TAG_BYTES))
    return Buffer.concat([decipher.update(bytes.subarray(IV_BYTES + TAG_BYTES)), decipher.final()]).toString('utf8')
  } catch {
    return undefined
  }
}

const sealingKey = (secret: string, accountId: number): Buffer => createHmac('sha256', secret).update(`totp secret\0${accountId}`).digest()
