import { setImmediate as nextTurn, setTimeout as sleep } from 'node:timers/promises'

/** How long a write waits for another connection's write lock before it fails, as SQLite's 5 s busy timeout would. */
const WRITE_LOCK_WAIT_MS = 5000

const isBusy = (error: unknown): boolean => (error as { code?: unknown }).code === 'SQLITE_BUSY'

/**
 * Runs a write transaction on a connection with no busy timeout of its own, waiting for a write
 * lock that another connection holds (another worker process, the CLI) the way SQLite's busy
 * timeout does, but between turns of the event loop: SQLite's own wait sleeps the thread, 1 ms
 * and more at a time, and every read with it. The transaction must take the lock before it
 * writes (BEGIN IMMEDIATE), so a refused attempt has written nothing and can simply run again.
 */
export async function whenWriteLockFree<T> (write: () => T): Promise<T> {
  const deadline = Date.now() + WRITE_LOCK_WAIT_MS
  for (let attempt = 1; ; attempt++) {
    try {
      return write()
    } catch (error) {
      if (!isBusy(error) || Date.now() > deadline) throw error
    }
    // A commit holds the lock for tens of microseconds: try again at once a few times, then every millisecond.
    await (attempt < 8 ? nextTurn() : sleep(1))
  }
}
