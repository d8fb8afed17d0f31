import { writeSync } from 'node:fs'
import type { Writable } from 'node:stream'
import type { DestinationStream } from 'pino'

/**
 * Lines gather until this many bytes (about 80 access-log lines) make one write... Larger batches
 * cost a request less, but keep lines in the heap long enough to be promoted out of the young
 * generation: with 64 KB the peak RSS under load grew by 40 MB.
 */
export const LOG_BATCH_BYTES = 16 * 1024
/** ...or until this long has passed, so that a quiet service's lines are not held back. */
export const LOG_FLUSH_MS = 250
/**
 * Batches waiting for a reader that does not keep up are dropped beyond this many bytes, rather
 * than growing the heap until the process dies. Standard error says when lines start to be dropped.
 */
export const LOG_BACKLOG_BYTES = 16 * 1024 * 1024

/** Where the lines go: process.stdout, or any stream over a file descriptor. */
export type LogOutput = Writable & { fd?: number }

/**
 * Where the service's logger writes: the process's own standard output, handed whole batches of lines.
 *
 * - On a pipe or a socket (a supervisor, a container runtime, journald), Node's stream writes what
 *   the kernel accepts at once, on the event loop, without blocking; what a slow reader leaves is
 *   queued and written as the reader catches up. On a file, a write is a copy into the page cache.
 *   Either way no request waits for the log, and no other thread is woken.
 * - pino's asynchronous destination (sonic-boom with `sync: false`) was the first choice. It writes
 *   in libuv's thread pool, which cost a tenth of a cached read in thread hand-offs, and a batch
 *   still in that pool when process.exit() runs is written after the lines written synchronously
 *   at exit, or not at all. Here nothing is in flight that the exit hook cannot see.
 * - sonic-boom's own batching (`minLength`) measured the whole growing string again for every
 *   line: a fifth of a cached read (docs/performance.md, "What each protection costs"). Here a line
 *   costs a push onto an array, and the batch is joined once.
 *
 * Nothing gathered is lost at exit: a natural exit hands the last batch over before the loop ends,
 * and process.exit() writes it synchronously.
 */
export class BatchedLogDestination implements DestinationStream {
  private lines: string[] = []
  private bytes = 0
  private dropping = false
  private readonly handOverNow = (): void => { this.handOver() }
  private readonly writeOutAtExit = (): void => {
    const batch = this.take()
    if (batch !== undefined && this.out.fd !== undefined) writeAll(this.out.fd, batch)
  }

  constructor (private readonly out: LogOutput = process.stdout) {
    setInterval(this.handOverNow, LOG_FLUSH_MS).unref()
    process.on('beforeExit', this.handOverNow)
    process.on('exit', this.writeOutAtExit)
  }

  write (line: string): void {
    this.lines.push(line)
    this.bytes += line.length
    if (this.bytes >= LOG_BATCH_BYTES) this.handOver()
  }

  /** logger.flush(): what is gathered goes to the output, and the callback runs once the output has taken it. */
  flush (callback?: (error?: Error | null) => void): void {
    this.handOver()
    this.out.write('', callback)
  }

  private handOver (): void {
    const batch = this.take()
    if (batch === undefined) return
    if (this.out.writableLength > LOG_BACKLOG_BYTES) {
      if (!this.dropping) process.stderr.write(`log lines dropped: standard output has taken none of the last ${LOG_BACKLOG_BYTES} bytes\n`)
      this.dropping = true
      return
    }
    this.dropping = false
    this.out.write(batch)
  }

  private take (): string | undefined {
    if (this.lines.length === 0) return undefined
    const batch = this.lines.join('')
    this.lines = []
    this.bytes = 0
    return batch
  }
}

/** How long the exit hook waits, in all, for a full pipe to take the last batch. */
const EXIT_WRITE_PATIENCE_MS = 1000

/**
 * Writes `text` whole, from an exit hook: a pipe Node has made non-blocking refuses (EAGAIN) while
 * it is full, so the hook waits a millisecond and tries again, for at most EXIT_WRITE_PATIENCE_MS.
 */
function writeAll (fd: number, text: string): void {
  let rest = Buffer.from(text)
  const sleeper = new Int32Array(new SharedArrayBuffer(4))
  let patience = EXIT_WRITE_PATIENCE_MS
  while (rest.length > 0) {
    try {
      rest = rest.subarray(writeSync(fd, rest))
    } catch (error) {
      if ((error as NodeJS.ErrnoException).code !== 'EAGAIN' || patience-- <= 0) return // the reader has gone, or stopped reading
      Atomics.wait(sleeper, 0, 0, 1)
    }
  }
}
