/**
 * Group commit: writes that arrive while the event loop is busy are collected and
 * handed to `commitBatch` together, so one transaction (and one fsync) acknowledges
 * many requests. Each caller's promise settles only after its batch committed.
 * Batches never overlap: the next one starts when the previous one has settled.
 */
export class GroupCommit<Item, Result> {
  private pending: Array<{ item: Item, resolve: (result: Result) => void, reject: (error: unknown) => void }> = []
  private scheduled = false
  private running = false
  private committed = 0

  constructor (
    private readonly commitBatch: (items: Item[]) => Promise<Result[]> | Result[],
    private readonly maxBatchSize: number
  ) {}

  /** Batches handed to `commitBatch` so far. */
  get batches (): number {
    return this.committed
  }

  submit (item: Item): Promise<Result> {
    return new Promise((resolve, reject) => {
      this.pending.push({ item, resolve, reject })
      this.schedule()
    })
  }

  private schedule (): void {
    if (this.scheduled || this.running) return
    this.scheduled = true
    setImmediate(() => { void this.flush() })
  }

  private async flush (): Promise<void> {
    this.scheduled = false
    this.running = true
    const batch = this.pending.splice(0, this.maxBatchSize)
    this.committed++
    try {
      const results = await this.commitBatch(batch.map((entry) => entry.item))
      batch.forEach((entry, index) => entry.resolve(results[index] as Result))
    } catch (error) {
      for (const entry of batch) entry.reject(error)
    } finally {
      this.running = false
      if (this.pending.length > 0) this.schedule()
    }
  }

  /** Resolves once every write submitted so far has settled. */
  async drain (): Promise<void> {
    while (this.pending.length > 0 || this.running || this.scheduled) {
      await new Promise((resolve) => setImmediate(resolve))
    }
  }
}
