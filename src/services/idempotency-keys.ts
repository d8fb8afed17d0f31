import { ABANDONED_CLAIM_MS, fingerprintOf, IDEMPOTENCY_KEY_TTL_MS } from '../core/idempotency.js'
import type { NewPetRecord } from '../core/pets.js'
import type { IdempotencyClaim, IdempotencyKeyRef, IdempotencyRepository } from '../storage/store.js'

const PURGE_INTERVAL_MS = 60 * 60 * 1000

/** Idempotency-Key bookkeeping for creates: claims, releases, and an hourly purge of expired keys. */
export class IdempotencyKeys {
  private readonly purger: NodeJS.Timeout

  constructor (private readonly repository: IdempotencyRepository, onError: (error: unknown) => void) {
    this.purger = setInterval(() => {
      this.repository.purgeCreatedBefore(new Date(Date.now() - IDEMPOTENCY_KEY_TTL_MS)).catch(onError)
    }, PURGE_INTERVAL_MS).unref()
  }

  async claim (ref: IdempotencyKeyRef, pet: NewPetRecord): Promise<IdempotencyClaim> {
    const now = Date.now()
    return this.repository.claim(ref, fingerprintOf(pet), {
      now: new Date(now),
      expiredBefore: new Date(now - IDEMPOTENCY_KEY_TTL_MS),
      abandonedBefore: new Date(now - ABANDONED_CLAIM_MS)
    })
  }

  async release (ref: IdempotencyKeyRef): Promise<void> {
    await this.repository.release(ref)
  }

  close (): void {
    clearInterval(this.purger)
  }
}
