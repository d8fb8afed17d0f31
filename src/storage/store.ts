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

export interface AccountRepository {
  /** Throws DuplicateEmailError when the (lower-cased) email is taken. */
  create (account: { email: string, name: string | null }): Promise<AccountRow>
  findByEmail (email: string): Promise<AccountRow | undefined>
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

export interface Store {
  readonly engine: 'sqlite' | 'postgres'
  readonly pets: PetRepository
  readonly accounts: AccountRepository
  readonly apiKeys: ApiKeyRepository
  readonly idempotency: IdempotencyRepository
  /** The named setting, created with the given value if it does not exist yet; all instances see the same value. */
  setting (name: string, createValue: () => string): Promise<string>
  /** Applies pending migrations; returns the versions applied. */
  migrate (): Promise<number[]>
  /** Writes a consistent copy of the database to a new file while it is in use (embedded engines only). */
  backupTo?: (path: string) => Promise<void>
  /** Connection pool occupancy, for engines that pool connections. */
  poolStats?: () => { total: number, idle: number, waiting: number }
  /** Resolves when the database answers a trivial query. */
  ping (): Promise<void>
  close (): Promise<void>
}
