import { setTimeout as sleep } from 'node:timers/promises'

export interface EventuallyOptions {
  /** How long to keep trying, in ms: every wait has a deadline. */
  timeout: number
  /** The pause between tries, in ms (default 20): short, since what is awaited offers no event. */
  interval?: number
}

/**
 * Runs `fn` until it returns without throwing, and resolves with what it returned. `fn` may be
 * async; it states what it waits for with assertions (or by throwing), so the last failure says
 * what never happened. A returned value, falsy or not, counts as success.
 *
 * After `timeout` ms it throws the last error, its message prefixed with the elapsed time; the
 * original error is its cause.
 *
 * Give every `assert.ok` in `fn` a message: without one, Node reads and parses the calling file's
 * source to write it, which costs CPU-seconds at every failed try and can starve what is awaited.
 */
export async function eventually<T> (fn: () => T | Promise<T>, { timeout, interval = 20 }: EventuallyOptions): Promise<T> {
  const started = performance.now()
  for (;;) {
    try {
      return await fn()
    } catch (error) {
      const elapsed = Math.round(performance.now() - started)
      if (elapsed >= timeout) {
        const message = error instanceof Error ? error.message : String(error)
        throw new Error(`still failing after ${elapsed} ms (deadline ${timeout} ms): ${message}`, { cause: error })
      }
    }
    await sleep(interval)
  }
}

/** The status of a response, its body read to the end (so the connection can be reused). */
export async function statusOf (response: Response | Promise<Response>): Promise<number> {
  const answer = await response
  await answer.arrayBuffer()
  return answer.status
}
