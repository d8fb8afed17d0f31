import { createHash } from 'node:crypto'
import type { NewPetRecord } from './pets.js'

/** How long a key is remembered (IETF httpapi Idempotency-Key draft: the server announces its own window). */
export const IDEMPOTENCY_KEY_TTL_MS = 24 * 60 * 60 * 1000
/** A claim still uncompleted after this long belongs to a request that died; its key may be reused. */
export const ABANDONED_CLAIM_MS = 60 * 1000

const KEY_TEXT = /^[\x21-\x7e]{1,255}$/

/**
 * The header values parseIdempotencyKey accepts, as the OpenAPI document states them: a key
 * bare or in double quotes, but not the empty quoted string.
 */
export const IDEMPOTENCY_KEY_HEADER = {
  minLength: 1,
  maxLength: 257,
  pattern: '^(?!""$)(?:"[\\x21-\\x7E]{1,255}"|[\\x21-\\x7E]{1,255})$'
} as const

/**
 * The key as sent, unquoted when sent as a structured-field string ("…"); undefined when
 * it is not 1 to 255 visible ASCII characters.
 */
export function parseIdempotencyKey (header: string): string | undefined {
  const unquoted = /^"(.*)"$/.exec(header)?.[1] ?? header
  return KEY_TEXT.test(unquoted) ? unquoted : undefined
}

/** Two requests are "the same" when they would create the same animal, whatever their JSON spacing. */
export function fingerprintOf (pet: NewPetRecord): string {
  return createHash('sha256')
    .update(JSON.stringify([pet.name, pet.categoryId.toString(), pet.status ?? null]))
    .digest('base64url')
}

export interface StoredClaim {
  fingerprint: string
  petId: number | null
  createdAt: number
}

export type ClaimDecision = 'reclaim' | 'mismatch' | 'in_flight' | 'completed'

/** What an existing record of a key means for a new request carrying it. */
export function decideClaim (stored: StoredClaim, fingerprint: string, times: { expiredBefore: number, abandonedBefore: number }): ClaimDecision {
  if (stored.createdAt < times.expiredBefore) return 'reclaim'
  if (stored.petId === null && stored.createdAt < times.abandonedBefore) return 'reclaim'
  if (stored.fingerprint !== fingerprint) return 'mismatch'
  return stored.petId === null ? 'in_flight' : 'completed'
}
