import type { KeyUsageRepository, UsageCount, UsageOutcome } from '../storage/store.js'

/** Counts reach the database at least this often, so they are visible within a minute of the requests. */
export const USAGE_FLUSH_MS = 15_000
/** Counts are kept this long (docs/api-keys.md), then deleted. */
export const USAGE_KEPT_DAYS = 90
const HOUR_MS = 3_600_000
const DAY_MS = 24 * HOUR_MS
/** How often an instance deletes counts older than USAGE_KEPT_DAYS. */
const PURGE_EVERY_MS = HOUR_MS
/** Counts of this many (key, hour, operation, outcome) rows waiting at most: beyond, a failing database loses the oldest rather than memory. */
const MAX_PENDING_ROWS = 100_000

const OUTCOMES: readonly UsageOutcome[] = ['2xx', '4xx', '5xx']

function outcomeIndex (statusCode: number): 0 | 1 | 2 {
  return statusCode < 400 ? 0 : statusCode < 500 ? 1 : 2
}

/**
 * Requests per API key, hour, operation and outcome, counted in memory and added to the stored
 * counts in one batch every USAGE_FLUSH_MS: a request costs two map lookups and an increment,
 * never a write. Every instance adds its own counts, so the stored rows hold the sums.
 */
export class UsageRecorder {
  /** hour start → key id → operation → counts by outcome (2xx, 4xx, 5xx). */
  private pending = new Map<number, Map<string, Map<string, [number, number, number]>>>()
  private hour = -1
  private current = new Map<string, Map<string, [number, number, number]>>()
  private pendingRows = 0
  private lastPurge = 0
  private flushing: Promise<void> | undefined
  private readonly timer: NodeJS.Timeout

  constructor (private readonly usage: KeyUsageRepository, private readonly onError: (error: unknown) => void, private readonly now: () => number = Date.now) {
    this.timer = setInterval(() => { void this.flush() }, USAGE_FLUSH_MS).unref()
  }

  count (keyId: string, operation: string, statusCode: number): void {
    const at = this.now()
    const hour = at - (at % HOUR_MS)
    if (hour !== this.hour) {
      this.hour = hour
      let byKey = this.pending.get(hour)
      if (byKey === undefined) this.pending.set(hour, byKey = new Map())
      this.current = byKey
    }
    const counts = this.slot(this.current, keyId, operation)
    if (counts !== undefined) counts[outcomeIndex(statusCode)]++
  }

  /** The counts of (key, operation) in one hour's map, made when new unless MAX_PENDING_ROWS are waiting already. */
  private slot (byKey: Map<string, Map<string, [number, number, number]>>, keyId: string, operation: string): [number, number, number] | undefined {
    let byOperation = byKey.get(keyId)
    if (byOperation === undefined) byKey.set(keyId, byOperation = new Map())
    let counts = byOperation.get(operation)
    if (counts === undefined) {
      if (this.pendingRows >= MAX_PENDING_ROWS) return undefined
      byOperation.set(operation, counts = [0, 0, 0])
      this.pendingRows++
    }
    return counts
  }

  /** Adds what was counted to the database; on failure the counts wait for the next flush. */
  async flush (): Promise<void> {
    if (this.flushing !== undefined) {
      await this.flushing
      return
    }
    this.flushing = this.write().finally(() => { this.flushing = undefined })
    await this.flushing
  }

  private async write (): Promise<void> {
    const taken = this.pending
    this.pending = new Map()
    this.hour = -1
    this.pendingRows = 0
    const rows: UsageCount[] = []
    for (const [hour, byKey] of taken) {
      for (const [keyId, byOperation] of byKey) {
        for (const [operation, counts] of byOperation) {
          counts.forEach((count, index) => {
            if (count > 0) rows.push({ keyId, hour: new Date(hour), operation, outcome: OUTCOMES[index] as UsageOutcome, count })
          })
        }
      }
    }
    try {
      if (rows.length > 0) await this.usage.add(rows)
    } catch (error) {
      for (const row of rows) this.restore(row)
      this.onError(error)
      return
    }
    const now = this.now()
    if (now - this.lastPurge >= PURGE_EVERY_MS) {
      this.lastPurge = now
      await this.usage.deleteBefore(new Date(now - USAGE_KEPT_DAYS * DAY_MS)).catch(this.onError)
    }
  }

  /** Puts a count that could not be written back, to be added with the next flush. */
  private restore ({ keyId, hour, operation, outcome, count }: UsageCount): void {
    let byKey = this.pending.get(hour.getTime())
    if (byKey === undefined) this.pending.set(hour.getTime(), byKey = new Map())
    const counts = this.slot(byKey, keyId, operation)
    if (counts !== undefined) counts[OUTCOMES.indexOf(outcome) as 0 | 1 | 2] += count
  }

  async close (): Promise<void> {
    clearInterval(this.timer)
    await this.flush()
  }
}
