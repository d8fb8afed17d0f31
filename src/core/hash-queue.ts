/**
 * The rules of the portal's password-hash queue, one per instance (src/portal/password.ts).
 * Each scrypt takes 128 MiB and a thread-pool thread for a few hundred milliseconds (at the default cost), so few run
 * at once and few clients are admitted; what is refused gets 429 with a wait, and the rules
 * below make that wait fair to the patient:
 *
 * - places and threads by kind: a sign-up may take only some of the places and a log-in from
 *   an unknown browser a few more, so the last places are kept for log-ins and, last of all, for
 *   browsers that have logged in to the email before (a device cookie). Of the threads, sign-ups
 *   may use only one, and a known browser's check gets the next free thread, then a log-in's, then
 *   a sign-up's. A flood of sign-ups, or of guesses, never fills the whole queue, and a log-in
 *   waits behind no sign-up but the one hashing;
 * - backoff: every refusal is counted against the client address and its network, and each one
 *   doubles the wait; a client that comes back before its wait has ended is refused at once,
 *   without queueing, and waits longer still. A client that honours Retry-After meets a short
 *   wait; one that retries at once shuts itself out. A network takes some refusals before its own
 *   wait starts, since several people behind it may each be refused once; a known browser is held
 *   to its own address's wait only, so neighbours that flood do not shut it out.
 */
export type PasswordCheckKind = 'sign-up' | 'log-in' | 'known-device'

export const HASH_QUEUE = Object.freeze({
  /** Password hashes running at once. */
  concurrent: 2,
  /** Clients admitted at once (running or waiting), one place each. */
  places: 8,
  /** How many of the places each kind may fill. */
  placesFor: Object.freeze<Record<PasswordCheckKind, number>>({ 'sign-up': 4, 'log-in': 6, 'known-device': 8 }),
  /** How many of the threads each kind may use at once: a sign-up never holds them all. */
  threadsFor: Object.freeze<Record<PasswordCheckKind, number>>({ 'sign-up': 1, 'log-in': 2, 'known-device': 2 }),
  /** The order waiting checks get a thread in: the higher rank first, in order of arrival within a rank. */
  rank: Object.freeze<Record<PasswordCheckKind, number>>({ 'sign-up': 0, 'log-in': 1, 'known-device': 2 }),
  firstWaitMs: 1000,
  maxWaitMs: 60_000,
  /** Refusals a network takes, within its memory, before it has a wait of its own. */
  freeNetworkRefusals: 8,
  /** Refusals are forgotten this long after the wait they gave has ended. */
  forgetAfterMs: 10 * 60_000
})

/** What the queue remembers of one address or network: its refusals, and when its wait ends. */
export interface Backoff { refusals: number, untilMs: number }

/** The longest wait left on any of a client's subjects; 0 when it may try. */
export function waitLeftMs (backoffs: ReadonlyArray<Backoff | undefined>, nowMs: number): number {
  return Math.max(0, ...backoffs.map((backoff) => backoff === undefined ? 0 : backoff.untilMs - nowMs))
}

/**
 * A subject's backoff after one more refusal: the wait is `firstWaitMs` at the first refusal
 * beyond `free` and doubles with each further one, up to `maxWaitMs`, and never ends before
 * `atLeastMs` from now (what the admitted checks need) nor before the wait already given.
 */
export function afterRefusal (backoff: Backoff | undefined, nowMs: number, { free = 0, atLeastMs = 0 } = {}): Backoff {
  const forgotten = backoff === undefined || nowMs - backoff.untilMs > HASH_QUEUE.forgetAfterMs
  const refusals = (forgotten ? 0 : backoff.refusals) + 1
  const counted = refusals - free
  const waitMs = counted <= 0 ? 0 : Math.min(HASH_QUEUE.firstWaitMs * 2 ** Math.min(counted - 1, 30), HASH_QUEUE.maxWaitMs)
  const untilMs = Math.max(forgotten ? 0 : backoff.untilMs, nowMs + Math.max(waitMs, counted <= 0 ? 0 : atLeastMs))
  return { refusals, untilMs }
}

/** How long a subject must be remembered after this backoff was given: until its refusals are forgotten. */
export function rememberForMs (backoff: Backoff, nowMs: number): number {
  return Math.max(0, backoff.untilMs - nowMs) + HASH_QUEUE.forgetAfterMs
}
