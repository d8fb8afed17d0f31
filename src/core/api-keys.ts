import { hash, randomBytes } from 'node:crypto'
import { crc32 } from 'node:zlib'

/**
 * API key format: `ask_` + 32 random base62 characters + 6 base62 characters of the
 * CRC-32 of the random part. The prefix lets secret scanners find leaked keys; the
 * checksum lets the server refuse a mistyped or invented key without a lookup.
 */
export const API_KEY_PREFIX = 'ask_'
const RANDOM_LENGTH = 32
const CHECKSUM_LENGTH = 6
/** How much of a key is stored and shown to identify it: the type prefix and 8 random characters. */
const DISPLAY_PREFIX_LENGTH = API_KEY_PREFIX.length + 8
/** What test keys (docs/decisions.md, test mode) carry after the prefix: `ask_test_…`. */
const TEST_KEY_MARK = 'test_'
export const TEST_API_KEY_PREFIX = API_KEY_PREFIX + TEST_KEY_MARK
const API_KEY_PATTERN = new RegExp(`^${API_KEY_PREFIX}(?:${TEST_KEY_MARK})?[0-9A-Za-z]{${RANDOM_LENGTH + CHECKSUM_LENGTH}}$`)
/**
 * Text shaped like a key, live or test, well formed or not, in any case: loose on purpose, since a
 * truncated or mistyped key is still most of a secret, and logs must hold none (SECURITY.md). It
 * starts a word and holds at least as much as the displayed prefix does, so that an ordinary word
 * ending in the prefix's letters (`task_1`) is not taken for one.
 */
const KEY_SHAPED = new RegExp(`(?<![0-9A-Za-z])${API_KEY_PREFIX}(?:${TEST_KEY_MARK})?[0-9A-Za-z]{${DISPLAY_PREFIX_LENGTH - API_KEY_PREFIX.length},}`, 'gi')

const BASE62 = '0123456789ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz'

export function randomBase62 (length: number): string {
  let out = ''
  while (out.length < length) {
    for (const byte of randomBytes(length)) {
      // 248 = 4 * 62: dropping bytes above it keeps every character equally likely.
      if (byte < 248 && out.length < length) out += BASE62[byte % 62]
    }
  }
  return out
}

function base62Fixed (value: number, length: number): string {
  let out = ''
  for (let i = 0; i < length; i++) {
    out = BASE62[value % 62] + out
    value = Math.floor(value / 62)
  }
  return out
}

function checksumOf (random: string): string {
  return base62Fixed(crc32(random), CHECKSUM_LENGTH)
}

/**
 * A live key reads and writes the catalogue; a test key only its account's sandbox (docs/api-keys.md).
 * Keys made before modes are live.
 */
export const KEY_MODES = ['live', 'test'] as const
export type KeyMode = typeof KEY_MODES[number]

export function isKeyMode (text: string): text is KeyMode {
  return (KEY_MODES as readonly string[]).includes(text)
}

export interface GeneratedApiKey {
  /** The secret, shown once to its owner and never stored. */
  key: string
  hash: string
  prefix: string
}

/** A new key of the mode: a test key's secret and displayed prefix start `ask_test_`. */
export function generateApiKey (mode: KeyMode = 'live'): GeneratedApiKey {
  const random = randomBase62(RANDOM_LENGTH)
  const typePrefix = mode === 'test' ? TEST_API_KEY_PREFIX : API_KEY_PREFIX
  const key = typePrefix + random + checksumOf(random)
  return { key, hash: hashApiKey(key), prefix: key.slice(0, typePrefix.length + DISPLAY_PREFIX_LENGTH - API_KEY_PREFIX.length) }
}

/** True when the text has the shape and checksum of a key this service could have issued. */
export function isWellFormedApiKey (text: string): boolean {
  if (!API_KEY_PATTERN.test(text)) return false
  const random = text.slice(-(RANDOM_LENGTH + CHECKSUM_LENGTH), -CHECKSUM_LENGTH)
  return text.slice(-CHECKSUM_LENGTH) === checksumOf(random)
}

/** The mode a key's secret or displayed prefix says. */
export function keyModeOf (text: string): KeyMode {
  return text.startsWith(TEST_API_KEY_PREFIX) ? 'test' : 'live'
}

/** Whether the text holds anything shaped like a key: the one test of what must not reach a log. */
export function holdsKeyShape (text: string): boolean {
  return text.search(KEY_SHAPED) !== -1
}

/** The text with everything shaped like a key (holdsKeyShape) replaced by the censor. */
export function redactKeyShapes (text: string, censor: string): string {
  return text.replace(KEY_SHAPED, censor)
}

/** Keys are stored as SHA-256 digests: looking one up by digest reveals nothing about the secret. */
export function hashApiKey (key: string): string {
  // The one-shot form: this runs on every authenticated request.
  return hash('sha256', key, 'hex')
}

export function newKeyId (): string {
  return 'key_' + randomBase62(16)
}

/** A key id as it appears in a text (an audit event's detail names a rolled key's successor by it). */
export const KEY_ID_PATTERN = 'key_[0-9A-Za-z]{16}'
const KEY_ID = new RegExp(`^${KEY_ID_PATTERN}$`)

/** True when the text has the shape of a key id: anything else names no key, and is not looked up. */
export function isWellFormedKeyId (text: string): boolean {
  return KEY_ID.test(text)
}

/** Live keys (see src/storage/live-keys.ts) an account may hold at once. */
export const MAX_LIVE_KEYS = 100

/**
 * Key generations, and separately key revocations, an account may make per window, counted in
 * the database so that every instance shares the budget: enough for any person or deployment
 * script, and a bound on the churn one account can cause (every generation is a write, every
 * revocation reaches every instance).
 */
export const KEY_CHANGE_LIMIT = Object.freeze({ windowMs: 60 * 60_000, maxPerWindow: 30 })

export type KeyChange = 'generation' | 'revocation'

/** The attempt counter a change of the account's keys is counted under. */
export function keyChangeSubject (change: KeyChange, accountId: number): string {
  return `key-${change}s:${accountId}`
}

/** Parses an Authorization header value; the scheme is case-insensitive (RFC 7235). */
export function bearerTokenOf (authorization: string | undefined): { token?: string, scheme: 'none' | 'other' | 'bearer' } {
  if (authorization === undefined || authorization === '') return { scheme: 'none' }
  const match = /^bearer +([^ ]+) *$/i.exec(authorization)
  if (match) return { scheme: 'bearer', token: match[1] }
  return /^bearer\b/i.test(authorization) ? { scheme: 'bearer' } : { scheme: 'other' }
}

/**
 * What a key may do (docs/api-keys.md): each operation names the scope it needs on its route
 * (`x-required-scopes`, src/http/routes/pets.ts). A key made without a choice has both, as every
 * key made before scopes does.
 */
export const SCOPES = ['animals:read', 'animals:write'] as const
export type Scope = typeof SCOPES[number]
export const DEFAULT_SCOPES: readonly Scope[] = SCOPES

export function isScope (text: string): text is Scope {
  return (SCOPES as readonly string[]).includes(text)
}

/** Scopes as stored: space-separated (as OAuth 2.0 writes them), in the order of SCOPES, once each. */
export function scopesText (scopes: Iterable<Scope>): string {
  const chosen = new Set(scopes)
  return SCOPES.filter((scope) => chosen.has(scope)).join(' ')
}

export function scopesOfText (text: string): Scope[] {
  return text.split(' ').filter(isScope)
}

/** Parses a comma- or space-separated list of scopes; a message naming the unknown one otherwise. */
export function parseScopes (text: string): { scopes: Scope[] } | { problem: string } {
  const names = text.split(/[\s,]+/).filter((name) => name !== '')
  if (names.length === 0) return { problem: `give at least one scope: ${SCOPES.join(', ')}` }
  const unknown = names.find((name) => !isScope(name))
  if (unknown !== undefined) return { problem: `unknown scope ${JSON.stringify(unknown)}: the scopes are ${SCOPES.join(', ')}` }
  return { scopes: scopesOfText(scopesText(names as Scope[])) }
}

const DURATION_UNITS_MS: Record<string, number> = { s: 1000, m: 60_000, h: 3_600_000, d: 86_400_000, w: 7 * 86_400_000 }
/** The longest expiry or grace period a key may be given: ten years. */
export const MAX_KEY_DURATION_MS = 3650 * 86_400_000

/** `30m`, `12h`, `90d` (also `s` and `w`; `0` alone for none) in milliseconds; a message otherwise. */
export function parseDuration (text: string): { ms: number } | { problem: string } {
  const trimmed = text.trim()
  if (trimmed === '0') return { ms: 0 }
  const match = /^(\d{1,6})\s*([smhdw])$/.exec(trimmed)
  if (match === null) return { problem: `${JSON.stringify(text)} is not a duration: write a number and a unit, as in 30m, 12h or 90d (s, m, h, d, w)` }
  const ms = Number(match[1]) * (DURATION_UNITS_MS[match[2] as string] as number)
  if (ms > MAX_KEY_DURATION_MS) return { problem: `${JSON.stringify(text)} is longer than ten years` }
  return { ms }
}

const ZONED_TIME = /^(\d{4})-(\d{2})-(\d{2})T(\d{2}):(\d{2})(?::(\d{2})(?:\.\d{1,3})?)?(?:Z|[+-](\d{2}):(\d{2}))$/

/**
 * An ISO 8601 time with a date, a time and a zone (Z or an offset; a time without a zone would depend on the
 * machine's) in milliseconds since the epoch; NaN otherwise. Date.parse rolls impossible fields over
 * (February 30 becomes March 2), so each field must come back unchanged from the date it makes.
 */
export function parseZonedTime (text: string): number {
  const match = ZONED_TIME.exec(text)
  if (match === null) return Number.NaN
  const [year, month, day, hour, minute, second = 0, offsetHours = 0, offsetMinutes = 0] = match.slice(1).map((field) => field === undefined ? undefined : Number(field))
  const wall = new Date(Date.UTC(year ?? 0, (month ?? 0) - 1, day, hour, minute, second))
  const real = wall.getUTCFullYear() === year && wall.getUTCMonth() + 1 === month && wall.getUTCDate() === day &&
    wall.getUTCHours() === hour && wall.getUTCMinutes() === minute && wall.getUTCSeconds() === second
  return real && offsetHours <= 23 && offsetMinutes <= 59 ? Date.parse(text) : Number.NaN
}

/** How long a rolled key keeps working beside its successor unless told otherwise. */
export const DEFAULT_ROLL_GRACE_MS = 24 * 3_600_000
