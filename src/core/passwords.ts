import { randomBytes, scrypt, timingSafeEqual } from 'node:crypto'

export const MIN_PASSWORD_LENGTH = 12
/** Long enough for any passphrase or manager-generated password; bounds the work one request can ask for. */
export const MAX_PASSWORD_LENGTH = 1024

export interface ScryptParams {
  /** log2 of the CPU/memory cost N. */
  logN: number
  r: number
  p: number
}

/**
 * OWASP Password Storage Cheat Sheet (2025): scrypt with N=2^17, r=8, p=1, a 16-byte salt. Its N is
 * PASSWORD_HASH_COST's default; an operator may set another (scryptParamsAt).
 */
export const SCRYPT_PARAMS: Readonly<ScryptParams> = Object.freeze({ logN: 17, r: 8, p: 1 })
/**
 * The costs (log2 N) PASSWORD_HASH_COST accepts: 2^12 (4 MiB a hash) for memory-limited containers and
 * tests, up to 2^20 (1 GiB), the most a stored hash may ask for.
 */
export const HASH_COST_BOUNDS = Object.freeze({ min: 12, max: 20 })
const SALT_BYTES = 16
const KEY_BYTES = 32
/** Bounds on parameters read back from the database, so a damaged row cannot ask for unbounded work. */
const LIMITS = { logN: [10, HASH_COST_BOUNDS.max], r: [1, 32], p: [1, 16] } as const

/** The parameters hashes are made and checked at for a cost (log2 N): OWASP's r and p, N = 2^logN. */
export function scryptParamsAt (logN: number): Readonly<ScryptParams> {
  return Object.freeze({ ...SCRYPT_PARAMS, logN })
}

/**
 * scrypt needs 128·r·(N+2) bytes for V plus 128·r·p for B (128 MiB at the OWASP
 * parameters); Node refuses anything above maxmem, which defaults to 32 MiB.
 */
export function scryptMaxmem ({ logN, r, p }: ScryptParams): number {
  return 128 * r * (2 ** logN + 2) + 128 * r * p + 1024 * 1024
}

/** Why the password is not acceptable, as a sentence for the person choosing it; undefined when it is. */
export function passwordProblem (password: string): string | undefined {
  const length = [...normalizePassword(password)].length
  if (length < MIN_PASSWORD_LENGTH) return `The password must be at least ${MIN_PASSWORD_LENGTH} characters long.`
  if (length > MAX_PASSWORD_LENGTH) return `The password must be at most ${MAX_PASSWORD_LENGTH} characters long.`
  return undefined
}

/** NIST SP 800-63B: normalise Unicode, so the same password typed on another keyboard still matches. */
export function normalizePassword (password: string): string {
  return password.normalize('NFKC')
}

export interface ScryptHash {
  params: ScryptParams
  salt: Buffer
  key: Buffer
}

const b64 = (bytes: Buffer): string => bytes.toString('base64').replace(/=+$/, '')

/** PHC string format: $scrypt$ln=17,r=8,p=1$<salt>$<key>, both in unpadded base64. */
export function encodeScryptHash ({ params, salt, key }: ScryptHash): string {
  return `$scrypt$ln=${params.logN},r=${params.r},p=${params.p}$${b64(salt)}$${b64(key)}`
}

const PHC = /^\$scrypt\$ln=(\d{1,2}),r=(\d{1,2}),p=(\d{1,2})\$([A-Za-z0-9+/]{16,88})\$([A-Za-z0-9+/]{43,88})$/

/** The parts of a PHC scrypt string; undefined when it is not one or its parameters are out of bounds. */
export function parseScryptHash (encoded: string): ScryptHash | undefined {
  const match = PHC.exec(encoded)
  if (!match) return undefined
  const params = { logN: Number(match[1]), r: Number(match[2]), p: Number(match[3]) }
  for (const name of ['logN', 'r', 'p'] as const) {
    const [min, max] = LIMITS[name]
    if (params[name] < min || params[name] > max) return undefined
  }
  return { params, salt: Buffer.from(match[4] ?? '', 'base64'), key: Buffer.from(match[5] ?? '', 'base64') }
}

/** True when the hash was made with other parameters than the configured ones: rehash it at the next successful log-in. */
export function needsRehash (encoded: string, params: ScryptParams): boolean {
  const parsed = parseScryptHash(encoded)
  return parsed === undefined || parsed.params.logN !== params.logN || parsed.params.r !== params.r || parsed.params.p !== params.p
}

function deriveKey (password: string, salt: Buffer, params: ScryptParams, length: number): Promise<Buffer> {
  return new Promise((resolve, reject) => {
    scrypt(normalizePassword(password), salt, length, { N: 2 ** params.logN, r: params.r, p: params.p, maxmem: scryptMaxmem(params) },
      (error, key) => { if (error) reject(error); else resolve(key) })
  })
}

/** A PHC scrypt string for the password at the parameters, with a fresh random salt. */
export async function hashPassword (password: string, params: ScryptParams): Promise<string> {
  const salt = randomBytes(SALT_BYTES)
  return encodeScryptHash({ params, salt, key: await deriveKey(password, salt, params, KEY_BYTES) })
}

/**
 * Whether the password matches the PHC string, compared in constant time. An unreadable
 * string costs the same work as a real one made at `params` (the configured ones) and never matches.
 */
export async function verifyPassword (password: string, encoded: string, params: ScryptParams): Promise<boolean> {
  const parsed = parseScryptHash(encoded)
  if (parsed === undefined) {
    await deriveKey(password, randomBytes(SALT_BYTES), params, KEY_BYTES)
    return false
  }
  const candidate = await deriveKey(password, parsed.salt, parsed.params, parsed.key.length)
  return candidate.length === parsed.key.length && timingSafeEqual(candidate, parsed.key)
}
