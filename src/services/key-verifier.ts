import { hashApiKey, isWellFormedApiKey } from '../core/api-keys.js'
import type { ApiKeyRepository } from '../storage/store.js'
import { LastUsedRecorder } from './last-used-recorder.js'

export interface VerifiedKey {
  keyId: string
  accountId: number
}

/** Revocations by any process reach this one within this interval plus one query. */
export const REVOCATION_POLL_MS = 250
const MAX_CACHED_KEYS = 50_000

/**
 * Verifies presented API keys. A verified key is remembered by its hash, so a known
 * key costs one SHA-256 and a map lookup; the whole memory is dropped whenever the
 * shared revocation marker moves, which every instance polls.
 */
export class KeyVerifier {
  private readonly verified = new Map<string, VerifiedKey>()
  private forgotten = 0
  private marker: number | undefined
  private readonly poller: NodeJS.Timeout
  private readonly lastUsed: LastUsedRecorder

  /** Called on every verification of a well-formed key: true when the cache answered. */
  onLookup: (cacheHit: boolean) => void = () => {}

  constructor (private readonly apiKeys: ApiKeyRepository, private readonly onError: (error: unknown) => void) {
    this.lastUsed = new LastUsedRecorder(apiKeys, onError)
    this.poller = setInterval(() => { void this.checkRevocations() }, REVOCATION_POLL_MS).unref()
  }

  /** Moves whenever every remembered key is forgotten because one may have been revoked: a key peeked before is then to be peeked again. */
  get generation (): number {
    return this.forgotten
  }

  async start (): Promise<void> {
    this.marker = await this.apiKeys.revocationMarker()
  }

  /** The key when it was verified before and not revoked since; undefined means "ask verify()". */
  cached (presented: string): VerifiedKey | undefined {
    const key = this.peek(presented)
    if (key !== undefined) this.used(key)
    return key
  }

  /** Like cached(), but neither counted nor recorded as used: for a caller that may yet hand the request on. */
  peek (presented: string): VerifiedKey | undefined {
    return this.verified.get(hashApiKey(presented))
  }

  /** Counts a cache hit and records the key's use, for a key peek() returned. */
  used (key: VerifiedKey): void {
    this.onLookup(true)
    this.lastUsed.touch(key.keyId)
  }

  async verify (presented: string): Promise<VerifiedKey | undefined> {
    if (!isWellFormedApiKey(presented)) return undefined
    const known = this.cached(presented)
    if (known !== undefined) return known
    this.onLookup(false)
    const hash = hashApiKey(presented)
    const generation = this.generation
    const row = await this.apiKeys.findByHash(hash)
    if (row === undefined || row.revokedAt !== null) return undefined
    const key = { keyId: row.id, accountId: row.accountId }
    // A revocation seen while the lookup ran may concern this very key: do not remember it.
    if (generation === this.generation) this.remember(hash, key)
    this.lastUsed.touch(key.keyId)
    return key
  }

  private remember (hash: string, key: VerifiedKey): void {
    if (this.verified.size >= MAX_CACHED_KEYS) this.verified.clear()
    this.verified.set(hash, key)
  }

  private async checkRevocations (): Promise<void> {
    try {
      const marker = await this.apiKeys.revocationMarker()
      if (marker !== this.marker) {
        this.forgotten++
        this.verified.clear()
        this.marker = marker
      }
    } catch (error) {
      this.onError(error)
    }
  }

  async close (): Promise<void> {
    clearInterval(this.poller)
    await this.lastUsed.close()
  }
}
