import { hashApiKey, isWellFormedApiKey, type Scope } from '../core/api-keys.js'
import { inChildSpan } from './tracing.js'
import type { ApiKeyRepository, ApiKeyRow } from '../storage/store.js'
import { LastUsedRecorder } from './last-used-recorder.js'

export interface VerifiedKey {
  keyId: string
  accountId: number
  scopes: ReadonlySet<Scope>
  /** From this instant (ms since the epoch) the key is refused as expired; Infinity when it does not expire. */
  expiresAt: number
  /** A test key: its requests read and write its account's sandbox, never the live catalogue. */
  test: boolean
}

function verifiedKeyOf (row: ApiKeyRow): VerifiedKey {
  return { keyId: row.id, accountId: row.accountId, scopes: new Set(row.scopes), expiresAt: row.expiresAt?.getTime() ?? Infinity, test: row.mode === 'test' }
}

/** The lookup's span says the key was not cached; it names no key, nor its hash. */
const LOOKUP_ATTRIBUTES = { 'animal_store.key_cache': 'miss' }

/** Whether the key has expired at `now`: checked on every request, so an expiry needs no invalidation to take effect. */
export function hasExpired (key: VerifiedKey, now: number): boolean {
  return key.expiresAt <= now
}

/** Revocations by any process reach this one within this interval plus one query. */
export const REVOCATION_POLL_MS = 250
const MAX_CACHED_KEYS = 50_000

/**
 * Verifies presented API keys. A verified key is remembered by its hash, so a known key
 * costs one SHA-256 and a map lookup. Every instance polls the store's feed of key
 * invalidations (revocations, numbered in commit order) and forgets exactly the keys named
 * there (a revocation, or a roll that moved an expiry); the rest stay verified. An expiry needs no
 * invalidation: each request compares the remembered expiry with the clock.
 */
export class KeyVerifier {
  private readonly verified = new Map<string, VerifiedKey>()
  /** The hash each remembered key is kept under, by key id: what an invalidation names. */
  private readonly hashOf = new Map<string, string>()
  private dropped = 0
  private marker: number | undefined
  private polling = false
  private readonly poller: NodeJS.Timeout
  private readonly lastUsed: LastUsedRecorder

  /** Called on every verification of a well-formed key: true when the cache answered. */
  onLookup: (cacheHit: boolean) => void = () => {}

  constructor (private readonly apiKeys: ApiKeyRepository, private readonly onError: (error: unknown) => void) {
    this.lastUsed = new LastUsedRecorder(apiKeys, onError)
    this.poller = setInterval(() => { void this.checkInvalidations() }, REVOCATION_POLL_MS).unref()
  }

  /**
   * Moves whenever a key this verifier had remembered is forgotten (invalidated, or the whole
   * memory dropped): a key peeked before may since have been revoked, and is to be peeked again.
   * It does not move for invalidations of keys it never remembered.
   */
  get generation (): number {
    return this.dropped
  }

  async start (): Promise<void> {
    this.marker = await this.apiKeys.revocationMarker()
  }

  /** The key when it was verified before and not invalidated since; undefined means "ask verify()". */
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

  /**
   * The key that was presented, unless it is unknown or revoked; an expired key is returned too
   * (hasExpired() tells), so that its refusal can say that it expired.
   */
  async verify (presented: string): Promise<VerifiedKey | undefined> {
    if (!isWellFormedApiKey(presented)) return undefined
    const known = this.cached(presented)
    if (known !== undefined) return known
    this.onLookup(false)
    const hash = hashApiKey(presented)
    const marker = this.marker
    const row = await inChildSpan('API key lookup', LOOKUP_ATTRIBUTES, async () => await this.apiKeys.findByHash(hash))
    if (row === undefined || row.revokedAt !== null) return undefined
    const key = verifiedKeyOf(row)
    // Invalidations read while the lookup ran may concern this very key, which was not remembered
    // yet for them to drop: remember it only when none came in meanwhile.
    if (marker === this.marker) this.remember(hash, key)
    this.lastUsed.touch(key.keyId)
    return key
  }

  /** Forgets the keys with these ids, if remembered; `undefined` forgets every key. */
  invalidate (keyIds: Iterable<string> | undefined): void {
    if (keyIds === undefined) {
      if (this.verified.size > 0) this.dropped++
      this.verified.clear()
      this.hashOf.clear()
      return
    }
    let forgotten = false
    for (const keyId of keyIds) {
      const hash = this.hashOf.get(keyId)
      if (hash === undefined) continue
      this.hashOf.delete(keyId)
      this.verified.delete(hash)
      forgotten = true
    }
    if (forgotten) this.dropped++
  }

  private remember (hash: string, key: VerifiedKey): void {
    if (this.verified.size >= MAX_CACHED_KEYS) this.invalidate(undefined)
    this.verified.set(hash, key)
    this.hashOf.set(key.keyId, hash)
  }

  private async checkInvalidations (): Promise<void> {
    // A slow database must not stack polls, nor let an older answer move the marker back.
    if (this.marker === undefined || this.polling) return
    this.polling = true
    try {
      const { marker, keyIds } = await this.apiKeys.invalidationsSince(this.marker)
      if (marker === this.marker) return
      this.invalidate(keyIds)
      this.marker = marker
    } catch (error) {
      this.onError(error)
    } finally {
      this.polling = false
    }
  }

  async close (): Promise<void> {
    clearInterval(this.poller)
    await this.lastUsed.close()
  }
}
