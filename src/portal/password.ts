import { randomBytes } from 'node:crypto'
import { encodeScryptHash, hashPassword, SCRYPT_PARAMS, verifyPassword } from '../core/passwords.js'

/** Each scrypt takes 128 MiB and a thread-pool thread for a few hundred milliseconds. */
const MAX_CONCURRENT = 2
/** Beyond this many waiting, further requests are refused rather than queued without bound. */
const MAX_WAITING = 64

/** Too many password hashes are waiting on this instance; the request may be retried shortly. */
export class PasswordHasherBusyError extends Error {
  constructor () {
    super('too many password checks are in progress')
  }
}

/**
 * Compared against when the email has no account, or an account without a password, so
 * those log-ins cost the same work and take the same time as a wrong password. Random,
 * so no password matches it.
 */
const DUMMY_HASH = encodeScryptHash({ params: { ...SCRYPT_PARAMS }, salt: randomBytes(16), key: randomBytes(32) })

/** Hashes and checks portal passwords with scrypt, a few at a time per instance. */
export class PasswordHasher {
  private running = 0
  private readonly waiting: Array<() => void> = []

  private async gated<T> (work: () => Promise<T>): Promise<T> {
    if (this.running >= MAX_CONCURRENT) {
      if (this.waiting.length >= MAX_WAITING) throw new PasswordHasherBusyError()
      await new Promise<void>((resolve) => this.waiting.push(resolve))
    } else {
      this.running++
    }
    try {
      return await work()
    } finally {
      // The slot passes straight to the next waiter, so `running` stays as it is.
      const next = this.waiting.shift()
      if (next) next()
      else this.running--
    }
  }

  async hash (password: string): Promise<string> {
    return this.gated(() => hashPassword(password))
  }

  /** Whether the password matches; with no hash (no account, or none set) the same work is done and the answer is false. */
  async verify (password: string, encoded: string | null): Promise<boolean> {
    const matches = await this.gated(() => verifyPassword(password, encoded ?? DUMMY_HASH))
    return matches && encoded !== null
  }
}
