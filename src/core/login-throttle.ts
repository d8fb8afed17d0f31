import { createHash } from 'node:crypto'
import { isIPv4, isIPv6 } from 'node:net'

/**
 * How the portal slows password guessing without letting anyone lock another person out.
 * Every log-in is counted, before its password is checked (so concurrent guesses on several
 * instances cannot overshoot), against:
 *
 * - the client address (IPv6 by /64): at most `maxPerAddress` attempts in a window, sign-ups included;
 * - from a browser holding a device cookie for the email (src/core/device-cookies.ts): that
 *   browser's own count, `maxPerDevice` in a window, and nothing else about the email;
 * - from any other browser (an unknown device): the (email, address) pair, `maxPerPair` in a
 *   window, and the email's count for unknown devices, which locks the email for unknown devices
 *   only and progressively: from the `freeFailures`th attempt on, each attempt locks it for
 *   `firstLockMs`, doubling up to `maxLockMs`; the count is forgotten after `forgetAfterMs` quiet.
 *
 * A code of two-step verification, asked for once the password is right (or to turn it off), is
 * counted against the client address and the account: at most `maxCodesPerAccount` in a window,
 * from wherever they come, so guessing six digits stays hopeless.
 *
 * An attacker guessing at someone's email can so lock out only browsers that person has never
 * logged in with; a browser they have used keeps working. Emails are counted whether or not an
 * account has them, so the throttle says nothing about which emails exist.
 */
export const LOGIN_THROTTLE = Object.freeze({
  windowMs: 15 * 60_000,
  maxPerPair: 10,
  maxPerDevice: 10,
  /** Sign-ups count here too: each costs a password hash. */
  maxPerAddress: 50,
  maxCodesPerAccount: 10,
  freeFailures: 10,
  firstLockMs: 30_000,
  maxLockMs: 15 * 60_000,
  forgetAfterMs: 24 * 60 * 60_000
})

const digest = (text: string): string => createHash('sha256').update(text).digest('hex')

/** The throttle's key for an email's unknown devices; a digest, because what is typed there may be anything. */
export function accountSubject (email: string): string {
  return `account:${digest(email)}`
}

export function addressSubject (ip: string): string {
  return `address:${digest(addressBucket(ip))}`
}

/** One email tried from one network: what a single guesser without a device cookie is held to. */
export function pairSubject (email: string, ip: string): string {
  return `pair:${digest(`${email}\n${addressBucket(ip)}`)}`
}

/** The codes of two-step verification tried for one account. */
export function codeSubject (accountId: number): string {
  return `code:${digest(String(accountId))}`
}

/** One browser that holds a device cookie, by the cookie's nonce. */
export function deviceSubject (nonce: string): string {
  return `device:${digest(nonce)}`
}

/** IPv6 groups of an address, with the IPv4 tail of mixed notation folded into the last two; undefined when malformed. */
function ipv6Groups (ip: string): number[] | undefined {
  let text = ip.toLowerCase().replace(/%.*$/, '')
  const dotted = /(\d+)\.(\d+)\.(\d+)\.(\d+)$/.exec(text)
  if (dotted) {
    const [a, b, c, d] = dotted.slice(1).map(Number) as [number, number, number, number]
    text = text.slice(0, dotted.index) + `${((a << 8) | b).toString(16)}:${((c << 8) | d).toString(16)}`
  }
  const halves = text.split('::')
  if (halves.length > 2) return undefined
  const head = halves[0] === '' || halves[0] === undefined ? [] : halves[0].split(':')
  const tail = halves.length === 2 ? (halves[1] === '' || halves[1] === undefined ? [] : halves[1].split(':')) : undefined
  const groups = tail === undefined ? head : [...head, ...Array<string>(8 - head.length - tail.length).fill('0'), ...tail]
  if (groups.length !== 8 || !groups.every((group) => /^[0-9a-f]{1,4}$/.test(group))) return undefined
  return groups.map((group) => parseInt(group, 16))
}

/**
 * Addresses that one client can easily hold several of share a bucket: an IPv6 client
 * usually has a whole /64, so the throttle counts per /64. IPv4-mapped IPv6 is IPv4.
 */
export function addressBucket (ip: string): string {
  if (isIPv4(ip)) return ip
  if (!isIPv6(ip)) return ip
  const groups = ipv6Groups(ip)
  if (groups === undefined) return ip
  if (groups.slice(0, 5).every((group) => group === 0) && groups[5] === 0xffff) {
    const [high = 0, low = 0] = groups.slice(6)
    return `${high >> 8}.${high & 255}.${low >> 8}.${low & 255}`
  }
  return `${groups.slice(0, 4).map((group) => group.toString(16)).join(':')}::/64`
}

/**
 * The network an address belongs to, wider than its bucket: an IPv4 /24, an IPv6 /56 (what a
 * provider commonly gives one customer). One party easily holds every address of it.
 */
export function networkPrefix (ip: string): string {
  const bucket = addressBucket(ip)
  if (isIPv4(bucket)) return `${bucket.split('.').slice(0, 3).join('.')}.0/24`
  const groups = ipv6Groups(ip)
  if (groups === undefined) return bucket
  const [a = 0, b = 0, c = 0, d = 0] = groups
  return `${[a, b, c, d & 0xff00].map((group) => group.toString(16)).join(':')}::/56`
}

export interface AttemptCount {
  /** Attempts in the current window, this one included. */
  attempts: number
  windowStartedAt: Date
}

/** Which limit refused an attempt: the words the portal's message uses. */
export type ThrottledBy = 'address' | 'pair' | 'device' | 'account' | 'code'

export type ThrottleVerdict = { allowed: true } | { allowed: false, by: ThrottledBy, retryAfterSeconds: number }

const secondsUntil = (at: number, now: Date): number => Math.max(1, Math.ceil((at - now.getTime()) / 1000))

/**
 * Whether an attempt may go ahead, given the counts it produced in fixed windows, each with
 * its limit; the first count over its limit names the refusal and its wait.
 */
export function windowVerdict (counts: ReadonlyArray<{ by: ThrottledBy, count: AttemptCount, max: number }>, now: Date): ThrottleVerdict {
  const over = counts.find(({ count, max }) => count.attempts > max)
  if (over === undefined) return { allowed: true }
  return { allowed: false, by: over.by, retryAfterSeconds: secondsUntil(over.count.windowStartedAt.getTime() + LOGIN_THROTTLE.windowMs, now) }
}

/** How long counting the nth attempt from an unknown device locks the email for unknown devices: 0 until the free ones are used up, then doubling. */
export function unknownDeviceLockMs (attempts: number): number {
  if (attempts < LOGIN_THROTTLE.freeFailures) return 0
  const doublings = Math.min(attempts - LOGIN_THROTTLE.freeFailures, 30)
  return Math.min(LOGIN_THROTTLE.firstLockMs * 2 ** doublings, LOGIN_THROTTLE.maxLockMs)
}

/** The verdict on an attempt the email's unknown-device lock refused. */
export function lockedVerdict (lockedUntil: Date, now: Date): { by: ThrottledBy, retryAfterSeconds: number } {
  return { by: 'account', retryAfterSeconds: secondsUntil(lockedUntil.getTime(), now) }
}
