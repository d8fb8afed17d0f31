import type { NewPetRecord, PetStatus } from '../core/pets.js'

/** One page of animals, already serialised: the hot path never builds row objects. */
export interface PetPage {
  /** A JSON array of animals ordered by id ascending. */
  json: string
  count: number
  /** Id of the last animal on the page; undefined when the page is empty. */
  lastId: number | undefined
  /** True when at least one matching animal exists after lastId. */
  hasMore: boolean
}

export interface ListPetsQuery {
  status: PetStatus | undefined
  /** Only animals with a larger id are returned; 0 starts at the beginning. */
  afterId: number
  limit: number
}

export interface PetRepository {
  /**
   * Stores a new animal and resolves once it is durably committed. Concurrent calls may
   * share one transaction (group commit); each still gets its own id. With `claim`, the
   * claimed idempotency key is completed with the new id in that same transaction, so a
   * key is never left pointing nowhere while its animal exists.
   */
  insert (pet: NewPetRecord, claim?: IdempotencyKeyRef): Promise<{ id: number }>
  /** Stores many animals in one transaction (bulk loading); ids follow the given order. */
  insertMany (pets: readonly NewPetRecord[]): Promise<void>
  /** The animal as JSON, or undefined when no animal has that id. */
  findJsonById (id: number): Promise<string | undefined>
  /** Animals with id > afterId, optionally of one status, ordered by id ascending. */
  listPage (query: ListPetsQuery): Promise<PetPage>
  /** Whether any animal of that status (any status when undefined) has an id > afterId. */
  existsAfter (status: PetStatus | undefined, afterId: number): Promise<boolean>
}

export interface AccountRow {
  id: number
  email: string
  name: string | null
  createdAt: Date
}

export class DuplicateEmailError extends Error {
  constructor (readonly email: string) {
    super(`an account with email ${email} already exists`)
  }
}

export interface AccountCredentials {
  accountId: number
  /** PHC string of the password; null for an account created without one (by the CLI). */
  passwordHash: string | null
}

export interface AccountRepository {
  /** Throws DuplicateEmailError when the (lower-cased) email is taken. */
  create (account: { email: string, name: string | null, passwordHash?: string | null }): Promise<AccountRow>
  findByEmail (email: string): Promise<AccountRow | undefined>
  findById (id: number): Promise<AccountRow | undefined>
  /** What a log-in checks; undefined when no account has the email. */
  findCredentials (email: string): Promise<AccountCredentials | undefined>
  /** Replaces the account's password hash; false when no account has that id. */
  setPasswordHash (accountId: number, passwordHash: string): Promise<boolean>
}

export interface ApiKeyRow {
  id: string
  accountId: number
  label: string | null
  prefix: string
  createdAt: Date
  lastUsedAt: Date | null
  revokedAt: Date | null
}

export type RevokeResult = 'revoked' | 'already_revoked' | 'unknown'

export interface ApiKeyRepository {
  create (key: { id: string, accountId: number, label: string | null, prefix: string, hash: string }): Promise<ApiKeyRow>
  /** The key with that SHA-256 digest, revoked or not; undefined when none. */
  findByHash (hash: string): Promise<ApiKeyRow | undefined>
  listByAccount (accountId: number): Promise<ApiKeyRow[]>
  /** Marks the key revoked and advances the revocation marker in one transaction. */
  revoke (id: string): Promise<RevokeResult>
  /** A number that changes whenever any key is revoked; instances poll it. */
  revocationMarker (): Promise<number>
  /** Writes last-used times, never moving one backwards. */
  recordLastUsed (uses: ReadonlyArray<{ id: string, at: Date }>): Promise<void>
}

export interface SessionRow {
  accountId: number
  /** The synchronizer token every form of the session must send back. */
  csrfToken: string
  createdAt: Date
  expiresAt: Date
}

/** Portal log-in sessions, kept by the SHA-256 digest of their cookie token, never the token. */
export interface SessionRepository {
  create (session: { tokenHash: string, accountId: number, csrfToken: string, createdAt: Date, expiresAt: Date }): Promise<void>
  /** The session with that token digest, expired or not; undefined when none (never created, or deleted). */
  findByTokenHash (tokenHash: string): Promise<SessionRow | undefined>
  /** Moves the expiry of a session. */
  extend (tokenHash: string, expiresAt: Date): Promise<void>
  /** Ends one session (log-out); ending one that does not exist is not an error. */
  delete (tokenHash: string): Promise<void>
  /** Ends every session of the account (its password changed); returns how many. */
  deleteByAccount (accountId: number): Promise<number>
  /** Deletes sessions whose expiry is at or before the date; returns how many. */
  deleteExpired (now: Date): Promise<number>
}

export interface LoginAttemptCount {
  /** Attempts in the current window, the one just recorded included. */
  attempts: number
  windowStartedAt: Date
}

/** Log-in attempts per subject in fixed windows, shared by every instance. */
export interface LoginAttemptRepository {
  /**
   * Counts one attempt against each subject atomically, so concurrent attempts on any
   * instance each get their own count. A subject whose window started before windowStart
   * starts a new window at now. Returns the counts in the order of the subjects.
   */
  record (subjects: readonly string[], now: Date, windowStart: Date): Promise<LoginAttemptCount[]>
  /** Gives one attempt back (never below zero). */
  forgive (subject: string): Promise<void>
  /** Forgets every attempt of the subject. */
  clear (subject: string): Promise<void>
  /** Deletes subjects whose window started before the date; returns how many. */
  deleteStaleBefore (windowStart: Date): Promise<number>
}

/** The database cannot be reached or did not answer in time; the request may be retried. */
export class StoreUnavailableError extends Error {
  constructor (readonly reason: unknown) {
    super('the database is unavailable', { cause: reason })
  }
}

export interface IdempotencyKeyRef {
  apiKeyId: string
  key: string
}

export type IdempotencyClaim =
  | { outcome: 'claimed' }
  | { outcome: 'mismatch' }
  | { outcome: 'in_flight' }
  | { outcome: 'completed', petId: number }

export interface IdempotencyRepository {
  /**
   * Claims the key for a new request, unless an earlier request holds it: 'mismatch' when
   * that one had another fingerprint, 'in_flight' while it has not completed, 'completed'
   * with the animal it created. Keys created before `expiredBefore`, and uncompleted ones
   * created before `abandonedBefore`, are claimed afresh.
   */
  claim (ref: IdempotencyKeyRef, fingerprint: string, times: { now: Date, expiredBefore: Date, abandonedBefore: Date }): Promise<IdempotencyClaim>
  /** Gives up a claim that was never completed (its request failed). */
  release (ref: IdempotencyKeyRef): Promise<void>
  /** Deletes keys created before the date; returns how many. */
  purgeCreatedBefore (date: Date): Promise<number>
}

/** Where a PostgreSQL service with several hosts or read replicas stands (for /readyz and /metrics). */
export interface ReplicationStats {
  /** The host that takes writes (host:port/database); undefined while none is known. */
  primary: string | undefined
  timeline: number | undefined
  hosts: Array<{ host: string, role: 'primary' | 'standby' | 'writable' | 'down' | 'unknown' }>
  replicas: Array<{
    host: string
    /** in use; lagging beyond the limit; catching up (not yet shown to follow the primary); down; not a standby */
    state: 'in use' | 'lagging' | 'catching up' | 'down' | 'not a standby'
    /** At most this far behind the primary, in milliseconds; undefined when unknown. */
    lagMs: number | undefined
  }>
  /** Catalogue reads answered wholly by a replica, by a replica with one question to the primary, or by the primary. */
  replicaReads: { replica: number, confirmed: number, primary: number }
}

export interface Store {
  readonly engine: 'sqlite' | 'postgres'
  readonly pets: PetRepository
  readonly accounts: AccountRepository
  readonly apiKeys: ApiKeyRepository
  readonly idempotency: IdempotencyRepository
  readonly sessions: SessionRepository
  readonly loginAttempts: LoginAttemptRepository
  /** The named setting, created with the given value if it does not exist yet; all instances see the same value. */
  setting (name: string, createValue: () => string): Promise<string>
  /** Applies pending migrations; returns the versions applied. */
  migrate (): Promise<number[]>
  /** Writes a consistent copy of the database to a new file while it is in use (embedded engines only). */
  backupTo?: (path: string) => Promise<void>
  /**
   * How creates were grouped: transactions that committed created animals (commits) and, where
   * the service syncs the log itself (SQLite), syncs of it; each sync acknowledges every commit before it.
   */
  groupCommitStats: () => { commits: number, syncs: number | undefined }
  /** Connection pool occupancy, for engines that pool connections. */
  poolStats?: () => { total: number, idle: number, waiting: number }
  /** PostgreSQL: which host is the primary, how far each replica lags, where reads were answered. */
  replicationStats?: () => ReplicationStats
  /**
   * Registers a listener called when a different primary has taken over (a failover): what was read
   * before may include commits the new primary never got, so whatever was cached from it is to be dropped.
   */
  onPrimaryChange?: (listener: () => void) => void
  /** Resolves when the database answers a trivial query. */
  ping (): Promise<void>
  close (): Promise<void>
}
