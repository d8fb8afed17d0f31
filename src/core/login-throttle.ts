import { createHash } from 'node:crypto'
import { isIPv4, isIPv6 } from 'node:net'

/**
 * Failed log-ins are counted in fixed windows, per account (the submitted email, whether
 * or not an account has it, so the throttle says nothing about which emails exist) and
 * per client address. Every attempt takes a slot before the password is checked, so
 * concurrent guesses on several instances cannot overshoot; a successful log-in gives
 * the account's slots back and its own address slot.
 */
export const LOGIN_THROTTLE = Object.freeze({
  windowMs: 15 * 60_000,
  maxPerAccount: 10,
  /** Sign-ups count here too: each costs a password hash. */
  maxPerAddress: 50
})

const digest = (text: string): string => createHash('sha256').update(text).digest('hex')

/** The throttle's key for an email; a digest, because what is typed there may be anything. */
export function accountSubject (email: string): string {
  return `account:${digest(email)}`
}

export function addressSubject (ip: string): string {
  return `address:${digest(addressBucket(ip))}`
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

export interface AttemptCount {
  /** Attempts in the current window, this one included. */
  attempts: number
  windowStartedAt: Date
}

export type ThrottleVerdict = { allowed: true } | { allowed: false, retryAfterSeconds: number }

/** Whether this attempt may go ahead, given the counts it produced for the account and the address. */
export function throttleVerdict (account: AttemptCount, address: AttemptCount, now: Date): ThrottleVerdict {
  const over = [
    account.attempts > LOGIN_THROTTLE.maxPerAccount ? account : undefined,
    address.attempts > LOGIN_THROTTLE.maxPerAddress ? address : undefined
  ].filter((count) => count !== undefined)
  if (over.length === 0) return { allowed: true }
  const reopensAt = Math.max(...over.map((count) => count.windowStartedAt.getTime() + LOGIN_THROTTLE.windowMs))
  return { allowed: false, retryAfterSeconds: Math.max(1, Math.ceil((reopensAt - now.getTime()) / 1000)) }
}
