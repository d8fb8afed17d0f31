import { context, trace } from '@opentelemetry/api'
import { activeTracer, childSpan, endWith } from '../services/tracing.js'

/**
 * A turn of the event loop that found no I/O to handle takes a microsecond or two; one that
 * handled even a single request takes tens.
 */
const IDLE_TURN_MS = 0.01

/**
 * Group commit: writes that arrive while the event loop is busy are collected and
 * handed to `commitBatch` together, so one transaction (and one fsync) acknowledges
 * many requests. Each caller's promise settles only after its batch committed.
 * Batches never overlap: the next one starts when the previous one has settled.
 *
 * With `maxWaitMs`, a batch short of `maxBatchSize` waits for more writes while the loop has
 * other work, such as reads, but never longer than `maxWaitMs`: on a busy server each commit
 * then acknowledges many writes instead of a few, and what a commit costs goes to the other
 * requests instead. It is committed at the first turn of the loop that found nothing else to
 * do, so waiting never leaves the loop idle, and a lone write is not held back.
 */
export class GroupCommit<Item, Result> {
  private pending: Array<{ item: Item, resolve: (result: Result) => void, reject: (error: unknown) => void }> = []
  private scheduled = false
  private running = false
  private committed = 0

  constructor (
    private readonly commitBatch: (items: Item[]) => Promise<Result[]> | Result[],
    private readonly maxBatchSize: number,
    private readonly maxWaitMs = 0
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
    const deadline = performance.now() + this.maxWaitMs
    let turnStarted = performance.now()
    const atNextTurn = (): void => {
      const now = performance.now()
      const loopIdle = now - turnStarted < IDLE_TURN_MS
      turnStarted = now
      if (loopIdle || now >= deadline || this.pending.length >= this.maxBatchSize) void this.flush()
      else setImmediate(atNextTurn)
    }
    setImmediate(atNextTurn)
  }

  private async flush (): Promise<void> {
    this.scheduled = false
    this.running = true
    const batch = this.pending.splice(0, this.maxBatchSize)
    this.committed++
    try {
      const items = batch.map((entry) => entry.item)
      const results = await (activeTracer() === undefined ? this.commitBatch(items) : this.tracedCommit(items))
      batch.forEach((entry, index) => entry.resolve(results[index] as Result))
    } catch (error) {
      for (const entry of batch) entry.reject(error)
    } finally {
      this.running = false
      if (this.pending.length > 0) this.schedule()
    }
  }

  /**
   * The commit as a span of the request whose write began the batch (the one its turn was scheduled
   * from), with the batch's size; the sync it asks for is a span within it.
   */
  private async tracedCommit (items: Item[]): Promise<Result[]> {
    const span = childSpan('group commit', { 'db.operation.batch.size': items.length })
    if (span === undefined) return await this.commitBatch(items)
    const result = context.with(trace.setSpan(context.active(), span), async () => await this.commitBatch(items))
    endWith(span, result)
    return await result
  }

  /** Resolves once every write submitted so far has settled. */
  async drain (): Promise<void> {
    while (this.pending.length > 0 || this.running || this.scheduled) {
      await new Promise((resolve) => setImmediate(resolve))
    }
  }
}
