import { SpanKind } from '@opentelemetry/api'
import type { Redis } from 'ioredis'
import { inChildSpan } from './tracing.js'

/** Fixed windows of one minute, aligned to the clock, so that every instance counts the same window. */
export const RATE_LIMIT_WINDOW_MS = 60_000
/** How often counts admitted here are added to the shared ones, when nothing made it happen sooner. */
const RECONCILE_INTERVAL_MS = 100
/** A shared count that does not answer within this is given up on: the instance counts alone until Redis answers again. */
const RECONCILE_TIMEOUT_MS = 500

/**
 * How many requests one instance may admit for a key before the shared count has seen them: 1 % of
 * the limit, at least one. All instances together therefore admit at most
 * limit + instances × slack requests per key and window (docs/operations.md).
 */
export function slackFor (limit: number): number {
  return Math.max(1, Math.floor(limit / 100))
}

export type Admission =
  | { admitted: true, remaining: number, resetSeconds: number }
  | { admitted: false, resetSeconds: number }

interface KeyWindow {
  window: number
  /** The shared count of this window as Redis last reported it (every instance's admissions it had seen). */
  shared: number
  /** Admitted here and not yet added to the shared count. */
  pending: number
  /** Admitted here in this window, for counting alone while Redis is unreachable. */
  local: number
  /** Used since the last reconciliation: its shared count is read back at the next one. */
  touched: boolean
  redisKey: string
}

export interface RateLimiterEvents {
  /** Redis stopped answering (`shared` false) or answers again (`shared` true). */
  onSharedChange: (shared: boolean, error?: unknown) => void
}

/**
 * Per-key rate limits in fixed one-minute windows, counted in memory and reconciled with the
 * count all instances share in Redis in the background, every 100 ms and whenever a key has
 * `slack / 2` requests to add. A request waits for Redis only when its key is `slack` requests
 * ahead of the shared count here, or within `slack` requests of the limit. Requests are refused
 * only when the counts prove the limit reached, so nobody is refused early. Without Redis, or
 * while it does not answer, each instance counts alone.
 */
export class RateLimiter {
  private readonly windows = new Map<string, KeyWindow>()
  private readonly slack: number
  private readonly policyHeader: string
  private reconciling: Promise<void> | undefined
  private reconcileSoon = false
  private readonly timer: NodeJS.Timeout | undefined
  /** Whether the shared count is used: Redis is configured and answered the last reconciliation. */
  shared: boolean

  constructor (
    readonly limit: number,
    private readonly redis: Redis | undefined,
    private readonly events: RateLimiterEvents,
    private readonly prefix = 'animal-store:rate-limit:'
  ) {
    this.slack = slackFor(limit)
    this.shared = redis?.status === 'ready'
    this.policyHeader = `"per-key";q=${limit};w=${RATE_LIMIT_WINDOW_MS / 1000}`
    if (redis !== undefined) this.timer = setInterval(() => { void this.reconcile() }, RECONCILE_INTERVAL_MS).unref()
  }

  /**
   * Whether Redis is reachable, for /readyz: connected, and the last reconciliation succeeded; a
   * connection lost while no key is used shows here before any reconciliation fails. Undefined
   * without Redis.
   */
  get redisUp (): boolean | undefined {
    return this.redis === undefined ? undefined : this.shared && this.redis.status === 'ready'
  }

  /** The RateLimit-Policy field (IETF httpapi ratelimit-headers draft). */
  get policy (): string {
    return this.policyHeader
  }

  /**
   * Counts one request of the key when the limit allows it. Synchronous, except when this
   * instance is `slack` requests ahead of the shared count: then a promise, settled once the
   * shared count has caught up.
   */
  take (key: string, now = Date.now()): Admission | Promise<Admission> {
    const state = this.windowOf(key, now)
    if (this.shared && this.mustWait(state)) {
      // Read back at the next reconciliation even with nothing of its own to add.
      state.touched = true
      return this.afterReconciling().then(() => this.takeAfterWaiting(key))
    }
    return this.admit(state, now)
  }

  /**
   * A request that has waited for a reconciliation is decided now, unless the requests released
   * with it have already put this instance `slack` requests ahead of the shared count again: then
   * it waits for the next one. Admitting every waiter at once let each instance run up to the limit
   * on the count it had just read, and all of them together past limit + instances × slack.
   */
  private takeAfterWaiting (key: string): Admission | Promise<Admission> {
    const now = Date.now()
    const state = this.windowOf(key, now)
    if (this.shared && state.pending >= this.slack && state.shared + state.pending < this.limit) {
      state.touched = true
      return this.afterReconciling().then(() => this.takeAfterWaiting(key))
    }
    return this.admit(state, now)
  }

  /**
   * A request waits for the shared count when this instance is `slack` requests ahead of it, or
   * when what it knows leaves at most `slack` requests of the limit: near the limit, the others'
   * latest requests decide. A limit this instance knows to be reached needs no wait to refuse.
   */
  private mustWait (state: KeyWindow): boolean {
    const used = state.shared + state.pending
    return used < this.limit && (state.pending >= this.slack || this.limit - used <= this.slack)
  }

  private admit (state: KeyWindow, now: number): Admission {
    const resetSeconds = Math.max(1, Math.ceil(((state.window + 1) * RATE_LIMIT_WINDOW_MS - now) / 1000))
    // Alone, the instance knows only its own admissions.
    const used = this.shared ? state.shared + state.pending : state.local
    if (used >= this.limit) return { admitted: false, resetSeconds }
    state.pending++
    state.local++
    state.touched = true
    if (this.shared && state.pending * 2 >= this.slack) this.requestReconcile()
    return { admitted: true, remaining: this.limit - used - 1, resetSeconds }
  }

  private windowOf (key: string, now: number): KeyWindow {
    const window = Math.floor(now / RATE_LIMIT_WINDOW_MS)
    let state = this.windows.get(key)
    if (state === undefined || state.window !== window) {
      if (state === undefined && this.windows.size > 0) this.forgetBefore(window)
      state = { window, shared: 0, pending: 0, local: 0, touched: false, redisKey: `${this.prefix}${window}:${key}` }
      this.windows.set(key, state)
    }
    return state
  }

  /** Keys of past windows with nothing left to tell Redis are dropped, so the map holds only this minute's keys. */
  private forgetBefore (window: number): void {
    for (const [key, state] of this.windows) if (state.window < window && state.pending === 0) this.windows.delete(key)
  }

  private requestReconcile (): void {
    if (this.reconciling !== undefined) {
      this.reconcileSoon = true
      return
    }
    void this.reconcile()
  }

  private async afterReconciling (): Promise<void> {
    await (this.reconciling ?? this.reconcile())
  }

  /** Adds what was admitted here to the shared counts, and reads back those of the keys in use, in one round trip. */
  private async reconcile (): Promise<void> {
    if (this.reconciling !== undefined) return await this.reconciling
    const redis = this.redis
    if (redis === undefined) return
    const batch: Array<{ state: KeyWindow, pushed: number }> = []
    for (const state of this.windows.values()) {
      if (state.pending > 0 || state.touched) batch.push({ state, pushed: state.pending })
      state.touched = false
    }
    if (batch.length === 0) return
    const pipeline = redis.pipeline()
    for (const { state, pushed } of batch) {
      pipeline.incrby(state.redisKey, pushed).pexpire(state.redisKey, 2 * RATE_LIMIT_WINDOW_MS)
    }
    const run = (async () => {
      try {
        const results = await inChildSpan('rate limit reconciliation', { 'db.system.name': 'redis', 'animal_store.keys': batch.length },
          async () => await withTimeout(pipeline.exec(), RECONCILE_TIMEOUT_MS), SpanKind.CLIENT)
        const totals = batch.map((_entry, index) => {
          const [error, total] = results?.[index * 2] ?? [new Error('Redis gave no reply')]
          if (error !== null && error !== undefined) throw error
          return Number(total)
        })
        batch.forEach(({ state, pushed }, index) => {
          state.pending -= pushed
          state.shared = (totals[index] ?? 0) - state.pending
        })
        if (!this.shared) {
          this.shared = true
          this.events.onSharedChange(true)
        }
      } catch (error) {
        // Nothing was subtracted: what was not pushed is pushed by the next reconciliation that succeeds.
        for (const { state } of batch) state.touched = true
        if (this.shared) {
          this.shared = false
          this.events.onSharedChange(false, error)
        }
      }
    })()
    this.reconciling = run
    try {
      await run
    } finally {
      this.reconciling = undefined
      if (this.reconcileSoon) {
        this.reconcileSoon = false
        void this.reconcile()
      }
    }
  }

  /** Stops reconciling and closes the Redis connection, which the limiter owns. */
  close (): void {
    clearInterval(this.timer)
    this.redis?.disconnect()
  }
}

async function withTimeout<T> (promise: Promise<T>, ms: number): Promise<T> {
  let timer: NodeJS.Timeout | undefined
  try {
    return await Promise.race([promise, new Promise<never>((_resolve, reject) => {
      timer = setTimeout(() => reject(new Error(`Redis did not answer within ${ms} ms`)), ms)
    })])
  } finally {
    clearTimeout(timer)
  }
}
