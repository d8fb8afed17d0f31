import type { ApiKeyRepository } from '../storage/store.js'

const FLUSH_INTERVAL_MS = 10_000
/** A key's last-used time is written at most once a minute by each instance. */
const MIN_WRITE_INTERVAL_MS = 60_000

/**
 * Collects key uses in memory and writes them in batches, so authenticating a
 * request never costs a database write.
 */
export class LastUsedRecorder {
  private readonly pending = new Map<string, number>()
  private readonly lastWritten = new Map<string, number>()
  private readonly timer: NodeJS.Timeout

  constructor (private readonly apiKeys: ApiKeyRepository, private readonly onError: (error: unknown) => void) {
    this.timer = setInterval(() => { void this.flush(false) }, FLUSH_INTERVAL_MS).unref()
  }

  touch (keyId: string): void {
    this.pending.set(keyId, Date.now())
  }

  /** Writes due uses; with `all`, every pending use regardless of the per-minute rule. */
  async flush (all: boolean): Promise<void> {
    const now = Date.now()
    const due: Array<{ id: string, at: Date }> = []
    for (const [id, at] of this.pending) {
      if (all || now - (this.lastWritten.get(id) ?? 0) >= MIN_WRITE_INTERVAL_MS) {
        due.push({ id, at: new Date(at) })
        this.pending.delete(id)
        this.lastWritten.set(id, now)
      }
    }
    if (due.length === 0) return
    try {
      await this.apiKeys.recordLastUsed(due)
    } catch (error) {
      this.onError(error)
    }
  }

  async close (): Promise<void> {
    clearInterval(this.timer)
    await this.flush(true)
  }
}
