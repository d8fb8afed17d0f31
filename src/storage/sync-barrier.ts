import { activeTracer, inChildSpan } from '../services/tracing.js'

const ignore = (): void => {}

/**
 * Shares syncs among writers. `covering()` resolves once a sync that began after the call
 * has finished, so whatever was written before the call is then on disk. One sync runs at
 * a time, and every caller that arrives while it runs shares the next one.
 */
export class SyncBarrier {
  private running: Promise<void> | undefined
  private next: Promise<void> | undefined

  constructor (private readonly sync: () => Promise<void>) {}

  async covering (): Promise<void> {
    if (this.next !== undefined) return await this.next
    if (this.running === undefined) return await this.start()
    this.next = this.running.then(ignore, ignore).then(async () => {
      this.next = undefined
      await this.start()
    })
    return await this.next
  }

  /** Resolves when no sync is running or waiting to run. */
  async idle (): Promise<void> {
    while (this.next !== undefined || this.running !== undefined) await (this.next ?? this.running)?.catch(ignore)
  }

  private async start (): Promise<void> {
    // Traced as a span of the commit that asked for it; a sync others share is one span, the first asker's.
    const run = (activeTracer() === undefined ? this.sync() : inChildSpan('sync', {}, async () => { await this.sync() })).finally(() => { if (this.running === run) this.running = undefined })
    this.running = run
    await run
  }
}
