import { fstatSync, writeSync } from 'node:fs'
import { isatty } from 'node:tty'
import type { Writable } from 'node:stream'
import type { DestinationStream } from 'pino'

/**
 * Lines gather until one more would make the batch longer than this (about 20 access-log lines)...
 * It is PIPE_BUF: a pipe takes a write of at most this many bytes whole or not at all, so processes
 * that share one standard output (the workers of a cluster) never write into each other's lines,
 * even while the reader lags. Lines are counted in characters, which are bytes for the ASCII that
 * access-log lines are made of. Larger batches would also keep lines in the heap long enough to be
 * promoted out of the young generation: with 64 KB the peak RSS under load grew by 40 MB.
 */
export const LOG_BATCH_BYTES = 4096
/** ...or until this long has passed, so that a quiet service's lines are not held back. */
export const LOG_FLUSH_MS = 250
/**
 * The batch for a file, which has no PIPE_BUF: Linux keeps each write to a file together, whatever
 * its size. A write costs about as much for 16 KB as for 4 KB, so a longer batch makes each line
 * cheaper without holding lines in the heap for long.
 */
export const LOG_FILE_BATCH_BYTES = 16 * 1024
/**
 * Batches waiting for a reader that does not keep up are dropped beyond this many bytes, rather
 * than growing the heap until the process dies. Once the backlog is full, every batch is dropped
 * until the output has taken all that waited. Standard error says when lines start to be dropped,
 * and how many bytes were lost once they are written again: one pair of lines per episode.
 */
export const LOG_BACKLOG_BYTES = 16 * 1024 * 1024
/** How long the exit hook waits, in all, for a full pipe to take the last batches. */
const EXIT_WRITE_PATIENCE_MS = 1000

/** Where the lines go: process.stdout, or any stream over a file descriptor. */
export type LogOutput = Writable & { fd?: number }

/**
 * Where the service's logger writes: the process's own standard output, handed whole batches of lines.
 *
 * - On a pipe or a socket (a supervisor, a container runtime, journald), Node's stream writes what
 *   the kernel accepts at once, on the event loop, without blocking. On a file, a write is a copy
 *   into the page cache. Either way no request waits for the log, and no other thread is woken.
 * - One batch at a time is given to the output, the next once it has taken the last. Batches
 *   given while one is pending would be joined into one write (the stream's writev), longer than
 *   PIPE_BUF, which a full pipe takes in part. Batches that a slow reader leaves wait here.
 * - pino's asynchronous destination (sonic-boom) writes in libuv's thread pool: a batch still there
 *   when process.exit() runs is written after the lines written at exit, or not at all.
 * - On a file (`npm start > service.log`, systemd's `StandardOutput=append:`), Node writes standard
 *   output synchronously anyway, through a stream around `fs.writeSync`. Here a batch goes straight
 *   to `fs.writeSync`, without the stream: the same system call, and nothing waits; its batches are
 *   LOG_FILE_BATCH_BYTES long, since a file has no PIPE_BUF. The stream around the call adds work to
 *   every batch and saves none.
 *
 * Nothing gathered is lost at exit: a natural exit hands the last batch over and the loop runs
 * until it is written, and process.exit() writes what waits here synchronously.
 *
 * Speed code (docs/performance.md): a line costs a push onto an array, where sonic-boom measures its growing batch again.
 */
export class BatchedLogDestination implements DestinationStream {
  private lines: string[] = []
  private bytes = 0
  /** Batches handed over while the output had not yet taken the one before, oldest first. */
  private waiting: string[] = []
  private waitingBytes = 0
  private writing = false
  /** Bytes dropped since the backlog was last full; 0 while nothing is being dropped. */
  private dropped = 0
  /** The output failed (its reader has gone: EPIPE): lines are dropped from then on, as pino does. */
  private closed = false
  private flushed: Array<(error?: Error | null) => void> = []
  private readonly handOverNow = (): void => { this.handOver() }
  private readonly taken = (): void => {
    this.writing = false
    this.writeNext()
  }

  private readonly writeOutAtExit = (): void => {
    const rest = this.take()
    if (rest !== undefined) this.waiting.push(rest)
    const fd = this.out.fd
    // Batch by batch, so that each stays one write a pipe takes whole.
    const deadline = Date.now() + EXIT_WRITE_PATIENCE_MS
    if (fd !== undefined && !this.closed) for (const batch of this.waiting) if (!writeAll(fd, batch, deadline)) break
    this.waiting = []
  }

  private readonly fail = (error: Error): void => {
    if (this.closed) return
    this.closed = true
    this.waiting = []
    this.waitingBytes = 0
    try {
      writeSync(2, `log lines dropped from now on: standard output failed (${error.message})\n`)
    } catch {
      // Standard error has gone too: there is nobody left to tell.
    }
  }

  /** The output's descriptor when it is a file (or /dev/null), which takes every write whole at once; undefined for a pipe, a socket or a terminal. */
  private readonly file: number | undefined
  /** LOG_FILE_BATCH_BYTES for a file, LOG_BATCH_BYTES (PIPE_BUF) for anything else. */
  private readonly batchBytes: number

  constructor (private readonly out: LogOutput = process.stdout) {
    this.file = out.fd !== undefined && takesWritesAtOnce(out.fd) ? out.fd : undefined
    this.batchBytes = this.file === undefined ? LOG_BATCH_BYTES : LOG_FILE_BATCH_BYTES
    // Without a listener, a reader that goes away (EPIPE) would end the process.
    out.on('error', this.fail)
    setInterval(this.handOverNow, LOG_FLUSH_MS).unref()
    process.on('beforeExit', this.handOverNow)
    process.on('exit', this.writeOutAtExit)
  }

  write (line: string): void {
    if (this.bytes + line.length > this.batchBytes) this.handOver()
    this.lines.push(line)
    this.bytes += line.length
  }

  /** logger.flush(): what is gathered goes to the output, and the callback runs once the output has taken it. */
  flush (callback?: (error?: Error | null) => void): void {
    this.handOver()
    if (callback === undefined) return
    if (this.writing) this.flushed.push(callback)
    else process.nextTick(callback)
  }

  private handOver (): void {
    const batch = this.take()
    if (batch === undefined || this.closed) return
    if (this.file !== undefined) {
      this.writeToFile(this.file, batch)
      return
    }
    if (!this.writing) {
      this.writing = true
      this.out.write(batch, this.taken)
      return
    }
    // Dropping goes on until the backlog is empty: letting a batch in whenever one leaves would
    // scatter gaps through the log, and say so on stderr once for every gap.
    if (this.dropped > 0 || this.waitingBytes + batch.length > LOG_BACKLOG_BYTES) {
      if (this.dropped === 0) process.stderr.write(`log lines dropped: standard output has taken none of the last ${LOG_BACKLOG_BYTES} bytes\n`)
      this.dropped += batch.length
      return
    }
    this.waiting.push(batch)
    this.waitingBytes += batch.length
  }

  private writeToFile (fd: number, batch: string): void {
    try {
      const written = writeSync(fd, batch)
      const bytes = Buffer.byteLength(batch)
      if (written === bytes) return
      // A file takes part of a write only when it is short of space, or of its size limit.
      if (!writeAll(fd, Buffer.from(batch).subarray(written), Date.now() + EXIT_WRITE_PATIENCE_MS)) this.fail(new Error(`standard output took ${written} bytes of a batch of ${bytes}`))
    } catch (error) {
      this.fail(error as Error)
    }
  }

  private writeNext (): void {
    const batch = this.waiting.shift()
    if (batch === undefined || this.closed) {
      if (this.dropped > 0 && !this.closed) process.stderr.write(`log lines written again: ${this.dropped} bytes of lines were dropped while standard output lagged\n`)
      this.dropped = 0
      const flushed = this.flushed
      this.flushed = []
      for (const callback of flushed) callback()
      return
    }
    this.waitingBytes -= batch.length
    this.writing = true
    this.out.write(batch, this.taken)
  }

  private take (): string | undefined {
    if (this.lines.length === 0) return undefined
    const batch = this.lines.join('')
    this.lines = []
    this.bytes = 0
    return batch
  }
}

/** A regular file, or a character device that is no terminal (/dev/null): a write is taken whole, at once. */
function takesWritesAtOnce (fd: number): boolean {
  try {
    const stat = fstatSync(fd)
    return stat.isFile() || (stat.isCharacterDevice() && !isatty(fd))
  } catch {
    return false
  }
}

/**
 * Writes `text` whole, from an exit hook or after a file took part of a batch: a pipe Node has made
 * non-blocking refuses (EAGAIN) while it is full, so the hook waits a millisecond and tries again,
 * until `deadline` (Date.now()).
 * False when the reader has gone, or has not read before the deadline.
 */
function writeAll (fd: number, text: string | Buffer, deadline: number): boolean {
  let rest = typeof text === 'string' ? Buffer.from(text) : text
  const sleeper = new Int32Array(new SharedArrayBuffer(4))
  while (rest.length > 0) {
    try {
      const written = writeSync(fd, rest)
      if (written === 0 && Date.now() >= deadline) return false
      rest = rest.subarray(written)
    } catch (error) {
      if ((error as NodeJS.ErrnoException).code !== 'EAGAIN' || Date.now() >= deadline) return false
      Atomics.wait(sleeper, 0, 0, 1)
    }
  }
  return true
}
