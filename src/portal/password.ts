import { randomBytes } from 'node:crypto'
import { encodeScryptHash, hashPassword, SCRYPT_PARAMS, verifyPassword } from '../core/passwords.js'

/** Each scrypt takes 128 MiB and a thread-pool thread for a few hundred milliseconds. */
const MAX_CONCURRENT = 2
/**
 * Clients with a password check under way (running or waiting), at most one per client: a
 * newcomer waits for at most this many hashes, shared by MAX_CONCURRENT threads, however many
 * requests anyone sends.
 */
const MAX_ADMITTED = 8
/** What a hash is assumed to take until one has been timed. */
const FIRST_ESTIMATE_MS = 250

/** Refused before any work: the client already has a password check under way, or too many clients do. */
export class PasswordHasherBusyError extends Error {
  constructor (readonly reason: 'client' | 'full', readonly retryAfterSeconds: number) {
    super(reason === 'client' ? 'another password check of this client is under way' : 'too many password checks are under way')
  }
}

/** What one admitted client may ask for. */
export interface PasswordWork {
  hash: (password: string) => Promise<string>
  /** Whether the password matches; with no hash (no account, or none set) the same work is done and the answer is false. */
  verify: (password: string, encoded: string | null) => Promise<boolean>
}

/**
 * Compared against when the email has no account, or an account without a password, so
 * those log-ins cost the same work and take the same time as a wrong password. Random,
 * so no password matches it.
 */
const DUMMY_HASH = encodeScryptHash({ params: { ...SCRYPT_PARAMS }, salt: randomBytes(16), key: randomBytes(32) })

/**
 * Hashes and checks portal passwords with scrypt, a few at a time per instance, fairly: each
 * client (an address bucket) holds at most one place, and places are few, so the queue stays
 * short and one client sending many requests at once never makes another wait behind them all.
 * What does not get a place is refused at once, with how long to wait.
 */
export class PasswordHasher {
  private readonly admitted = new Set<string>()
  private running = 0
  private readonly waiting: Array<() => void> = []
  private meanHashMs = FIRST_ESTIMATE_MS

  /** Runs `work` as the client's one password check; throws PasswordHasherBusyError, before `work` starts, when there is no place. */
  async forClient<T> (client: string, work: (passwords: PasswordWork) => Promise<T>): Promise<T> {
    if (this.admitted.has(client)) throw new PasswordHasherBusyError('client', 1)
    if (this.admitted.size >= MAX_ADMITTED) {
      throw new PasswordHasherBusyError('full', Math.max(1, Math.ceil(this.meanHashMs * MAX_ADMITTED / MAX_CONCURRENT / 1000)))
    }
    this.admitted.add(client)
    try {
      return await work({
        hash: (password) => this.gated(() => hashPassword(password)),
        verify: async (password, encoded) => {
          const matches = await this.gated(() => verifyPassword(password, encoded ?? DUMMY_HASH))
          return matches && encoded !== null
        }
      })
    } finally {
      this.admitted.delete(client)
    }
  }

  private async gated<T> (work: () => Promise<T>): Promise<T> {
    if (this.running >= MAX_CONCURRENT) {
      await new Promise<void>((resolve) => this.waiting.push(resolve))
    } else {
      this.running++
    }
    const started = performance.now()
    try {
      return await work()
    } finally {
      this.meanHashMs = 0.8 * this.meanHashMs + 0.2 * (performance.now() - started)
      // The slot passes straight to the next waiter, so `running` stays as it is.
      const next = this.waiting.shift()
      if (next) next()
      else this.running--
    }
  }
}
