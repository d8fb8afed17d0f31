import { randomBytes } from 'node:crypto'
import { LRUCache } from 'lru-cache'
import { afterRefusal, HASH_QUEUE, rememberForMs, waitLeftMs, type Backoff, type PasswordCheckKind } from '../core/hash-queue.js'
import { addressBucket, networkPrefix } from '../core/login-throttle.js'
import { encodeScryptHash, hashPassword, verifyPassword, type ScryptParams } from '../core/passwords.js'
import { inChildSpan } from '../services/tracing.js'

/** What a hash is assumed to take until one has been timed. */
const FIRST_ESTIMATE_MS = 250
/** Addresses and networks whose refusals are remembered: the least recently refused are forgotten first. */
const MAX_REMEMBERED = 20_000

/**
 * Why a check was refused before any work: the client already has one under way, it came back
 * before its wait ended, or its kind has no place left.
 */
export type BusyReason = 'client' | 'early' | 'full'

export class PasswordHasherBusyError extends Error {
  constructor (readonly reason: BusyReason, readonly retryAfterSeconds: number) {
    super({ client: 'another password check of this client is under way', early: 'the client came back before its wait ended', full: 'too many password checks are under way' }[reason])
  }
}

/** Who asks for a password check: the client address, and what it is (src/core/hash-queue.ts). */
export interface PasswordClient { ip: string, kind: PasswordCheckKind }

/** What one admitted client may ask for. */
export interface PasswordWork {
  hash: (password: string) => Promise<string>
  /** Whether the password matches; with no hash (no account, or none set) the same work is done and the answer is false. */
  verify: (password: string, encoded: string | null) => Promise<boolean>
}

/**
 * Hashes and checks portal passwords with scrypt, a few at a time per instance, fairly: each
 * client (an address bucket) holds at most one place, places are few and kept in part for
 * log-ins and known browsers, so the queue stays short and one client sending many requests at
 * once never makes another wait behind them all. What does not get a place is refused at once,
 * with how long to wait, and a client that does not wait is refused for longer
 * (src/core/hash-queue.ts).
 */
export class PasswordHasher {
  /**
   * Compared against when the email has no account, or an account without a password, so
   * those log-ins cost the same work and take the same time as a wrong password: made at the
   * configured parameters. Random, so no password matches it.
   */
  private readonly dummyHash: string
  private readonly admitted = new Set<string>()
  private readonly backoffs = new LRUCache<string, Backoff>({ max: MAX_REMEMBERED })
  /** Checks running, by kind. */
  private readonly running = new Map<PasswordCheckKind, number>()
  /** Checks waiting for a thread, the first to run first. */
  private readonly waiting: Array<{ kind: PasswordCheckKind, start: () => void }> = []
  private meanHashMs = FIRST_ESTIMATE_MS

  /** `params`: what every hash is made and checked at (PASSWORD_HASH_COST). */
  constructor (readonly params: Readonly<ScryptParams>) {
    this.dummyHash = encodeScryptHash({ params, salt: randomBytes(16), key: randomBytes(32) })
  }

  /** Runs `work` as the client's one password check; throws PasswordHasherBusyError, before `work` starts, when there is no place. */
  async forClient<T> (client: PasswordClient, work: (passwords: PasswordWork) => Promise<T>): Promise<T> {
    const bucket = addressBucket(client.ip)
    this.admit(bucket, client)
    try {
      return await work({
        hash: async (password) => await inChildSpan('password hash', { 'animal_store.password_check': client.kind }, async () => await this.gated(client.kind, async () => await hashPassword(password, this.params))),
        verify: async (password, encoded) => {
          const matches = await inChildSpan('password check', { 'animal_store.password_check': client.kind },
            async () => await this.gated(client.kind, async () => await verifyPassword(password, encoded ?? this.dummyHash, this.params)))
          return matches && encoded !== null
        }
      })
    } finally {
      this.admitted.delete(bucket)
    }
  }

  /** Takes a place for the client, or counts the refusal against its address and network and throws. */
  private admit (bucket: string, client: PasswordClient): void {
    const now = Date.now()
    const address = `address:${bucket}`
    // A known browser is held to its own address only: neighbours who flood do not shut it out.
    const network = client.kind === 'known-device' ? undefined : `network:${networkPrefix(client.ip)}`
    const subjects = network === undefined ? [address] : [address, network]
    const reason: BusyReason | undefined = this.admitted.has(bucket)
      ? 'client'
      : waitLeftMs(subjects.map((subject) => this.backoffs.get(subject)), now) > 0
        ? 'early'
        : this.admitted.size >= HASH_QUEUE.placesFor[client.kind] ? 'full' : undefined
    if (reason === undefined) {
      this.backoffs.delete(address)
      this.admitted.add(bucket)
      return
    }
    // A full queue asks for at least the time the admitted checks need.
    const atLeastMs = reason === 'full' ? this.meanHashMs * HASH_QUEUE.places / HASH_QUEUE.concurrent : 0
    this.refused(address, now, { atLeastMs })
    if (network !== undefined) this.refused(network, now, { free: HASH_QUEUE.freeNetworkRefusals })
    const waitMs = waitLeftMs(subjects.map((subject) => this.backoffs.get(subject)), now)
    throw new PasswordHasherBusyError(reason, Math.max(1, Math.ceil(waitMs / 1000)))
  }

  private refused (subject: string, now: number, options: { free?: number, atLeastMs?: number }): void {
    const backoff = afterRefusal(this.backoffs.get(subject), now, options)
    this.backoffs.set(subject, backoff, { ttl: rememberForMs(backoff, now) })
  }

  private async gated<T> (kind: PasswordCheckKind, work: () => Promise<T>): Promise<T> {
    if (this.mayBegin(kind)) {
      this.begin(kind)
    } else {
      await new Promise<void>((resolve) => {
        // Behind every waiting check of its rank or higher, ahead of the lower ones.
        const behind = this.waiting.findIndex((waiter) => HASH_QUEUE.rank[waiter.kind] < HASH_QUEUE.rank[kind])
        this.waiting.splice(behind === -1 ? this.waiting.length : behind, 0, { kind, start: resolve })
      })
    }
    const started = performance.now()
    try {
      return await work()
    } finally {
      this.meanHashMs = 0.8 * this.meanHashMs + 0.2 * (performance.now() - started)
      this.running.set(kind, (this.running.get(kind) ?? 0) - 1)
      this.beginWaiting()
    }
  }

  private mayBegin (kind: PasswordCheckKind): boolean {
    const total = [...this.running.values()].reduce((sum, count) => sum + count, 0)
    return total < HASH_QUEUE.concurrent && (this.running.get(kind) ?? 0) < HASH_QUEUE.threadsFor[kind]
  }

  private begin (kind: PasswordCheckKind): void {
    this.running.set(kind, (this.running.get(kind) ?? 0) + 1)
  }

  /** Starts, in order, each waiting check that a thread, and its kind's share of them, allows. */
  private beginWaiting (): void {
    for (let index = 0; index < this.waiting.length;) {
      const waiter = this.waiting[index]
      if (waiter === undefined || !this.mayBegin(waiter.kind)) {
        index++
        continue
      }
      this.waiting.splice(index, 1)
      this.begin(waiter.kind)
      waiter.start()
    }
  }
}
