import type { KeyMode, Scope } from '../core/api-keys.js'
import { MAX_PET_ID, type NewPetRecord, type PetRecord, type PetStatus } from '../core/pets.js'

/** One page of animals. */
export interface PetPage {
  /** Ordered by id ascending. */
  pets: PetRecord[]
  /** True when at least one matching animal exists after the last one. */
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
  /** The animal, or undefined when no animal has that id. */
  findById (id: number): Promise<PetRecord | undefined>
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
  /** When the email was shown to reach its owner (or an operator vouched for it); null until then. */
  emailVerifiedAt: Date | null
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

/** A message to send, as the outbox keeps it: the link is the one thing it asks the reader to act on. */
export interface NewMail {
  recipient: string
  subject: string
  text: string
  html: string
  link: string
  /** What caused it (`verify_email`, `reset_password`, `key_created`, …), for the operator's listing. */
  kind: string
}

export type MailStatus = 'pending' | 'sent' | 'failed'

export interface MailRow extends NewMail {
  id: number
  status: MailStatus
  createdAt: Date
  /** When a sender may next claim it (a claim moves it past the time the sending may take). */
  nextAttemptAt: Date
  attempts: number
  lastError: string | null
  /** When it was sent, or given up. */
  finishedAt: Date | null
}

/**
 * The durable outbox. Events that cause mail write their message in their own transaction (the
 * repositories' `mail` arguments); senders on every instance claim due messages so that each is
 * handed to one sender at a time.
 */
export interface MailOutboxRepository {
  enqueue (mail: NewMail): Promise<number>
  /**
   * Claims up to `limit` pending messages due at `now` and moves their next attempt to `leaseUntil`,
   * counting an attempt: concurrent claims on any instance never return the same message.
   */
  claimDue (now: Date, leaseUntil: Date, limit: number): Promise<MailRow[]>
  markSent (id: number, at: Date): Promise<void>
  /** A failed attempt: pending again from `nextAttemptAt`. */
  retryLater (id: number, nextAttemptAt: Date, error: string): Promise<void>
  /** Given up: failed for good. */
  markFailed (id: number, at: Date, error: string): Promise<void>
  /** The newest messages first, or the pending ones only. */
  list (query: { pendingOnly: boolean, limit: number }): Promise<MailRow[]>
  /** How many messages wait to be sent: the outbox's backlog, for readiness and metrics. */
  pendingCount (): Promise<number>
}

export type AccountTokenPurpose = 'verify' | 'reset'

/** A single-use link's token, by the SHA-256 digest of the token. */
export interface AccountTokenRow {
  tokenHash: string
  accountId: number
  purpose: AccountTokenPurpose
  createdAt: Date
  expiresAt: Date
  usedAt: Date | null
}

export interface AccountTokenRepository {
  /** Stores the token and writes its message to the outbox, in one transaction; earlier unused tokens of the account for the purpose end. */
  issue (token: { tokenHash: string, accountId: number, purpose: AccountTokenPurpose, expiresAt: Date }, mail: NewMail): Promise<void>
  find (tokenHash: string): Promise<AccountTokenRow | undefined>
  /** Uses an unused, unexpired verification token and marks the account's email verified (one transaction); its account id, or undefined. */
  verifyEmail (tokenHash: string, now: Date): Promise<number | undefined>
  /**
   * Uses an unused, unexpired reset token: sets the password hash, ends every unused reset token and
   * every session of the account, and writes the message, in one transaction. Undefined when the token cannot be used.
   */
  resetPassword (tokenHash: string, now: Date, passwordHash: string, mail: NewMail): Promise<{ accountId: number, endedSessions: number } | undefined>
}

export interface AccountRepository {
  /**
   * Throws DuplicateEmailError when the (lower-cased) email is taken. With `verification`, the account
   * starts unverified and its token and message are written in the same transaction; without, it is verified.
   */
  create (account: {
    email: string
    name: string | null
    passwordHash?: string | null
    verification?: { tokenHash: string, expiresAt: Date, mail: (account: AccountRow) => NewMail }
  }): Promise<AccountRow>
  findByEmail (email: string): Promise<AccountRow | undefined>
  findById (id: number): Promise<AccountRow | undefined>
  /** What a log-in checks; undefined when no account has the email. */
  findCredentials (email: string): Promise<AccountCredentials | undefined>
  /** Replaces the account's password hash (with `mail` written in the same transaction); false when no account has that id. */
  setPasswordHash (accountId: number, passwordHash: string, mail?: NewMail): Promise<boolean>
  /** Marks the email verified (an operator vouches for it); false when no account has that id. */
  markEmailVerified (accountId: number, at: Date): Promise<boolean>
}

export interface ApiKeyRow {
  id: string
  accountId: number
  label: string | null
  prefix: string
  createdAt: Date
  lastUsedAt: Date | null
  revokedAt: Date | null
  /** What the key may do. */
  scopes: Scope[]
  /** Whose catalogue the key reads and writes: the live one, or its account's sandbox. */
  mode: KeyMode
  /** From this instant the key is refused; null for a key that does not expire. */
  expiresAt: Date | null
  /** The key that replaced this one when it was rolled; null when it was not. */
  rolledTo: string | null
  /**
   * Whether the key worked when the row was read (src/storage/live-keys.ts holds the one
   * definition): what the cap on keys counts and what the verifier accepts.
   */
  live: boolean
}

export type RollResult =
  | { outcome: 'rolled', old: ApiKeyRow, key: ApiKeyRow }
  /** No key has that id. */
  | { outcome: 'unknown' }
  /** The key is revoked or expired already: there is nothing to roll. */
  | { outcome: 'ended', old: ApiKeyRow }

export type RevokeResult = 'revoked' | 'already_revoked' | 'unknown'

/** The account already has as many live keys as it may; nothing was created. */
export class KeyLimitError extends Error {
  constructor (readonly limit: number) {
    super(`the account has ${limit} live keys, the most it may have`)
  }
}

/** Keys whose verification may no longer hold, in the order they changed. */
export interface KeyInvalidations {
  /** The position of the latest change: ask again from here. */
  marker: number
  /**
   * Ids of the keys changed after the marker asked from, up to `marker`; undefined when some of
   * those changes are no longer kept (or the marker went backwards, as after a restore): then
   * nothing verified before can be trusted.
   */
  keyIds: string[] | undefined
}

/** How long invalidations are kept: an instance that has not read them for longer forgets every key it verified. */
export const KEY_INVALIDATIONS_KEPT_MS = 60 * 60_000

/** Beyond this many invalidations since an instance last read them, it forgets every key rather than read them all. */
export const MAX_INVALIDATIONS_READ = 10_000

export interface ApiKeyPage {
  rows: ApiKeyRow[]
  /** How many keys of that kind the account has in all. */
  total: number
}

export interface NewApiKey {
  id: string
  accountId: number
  label: string | null
  prefix: string
  hash: string
  /** DEFAULT_SCOPES when absent. */
  scopes?: readonly Scope[]
  /** Null (never) when absent. */
  expiresAt?: Date | null
  /** 'live' when absent. */
  mode?: KeyMode
}

export interface ApiKeyRepository {
  /**
   * Creates the key unless the account already has `maxLive` live keys (KeyLimitError). The count
   * and the insert are one transaction that holds the account's row (PostgreSQL) or the write lock
   * (SQLite), so concurrent creations on any instance cannot overshoot the cap.
   */
  create (key: NewApiKey, limits: { maxLive: number }, mail?: NewMail): Promise<ApiKeyRow>
  /**
   * Issues `successor` (in its mode, by default the old key's) with the label and scopes of the live key `id` (and, when that one expires,
   * the same lifetime from now), and makes the old key expire `graceMs` from now unless it expires
   * sooner; records the old key's invalidation. One transaction, under the same cap as create():
   * the old key counts until it expires.
   */
  roll (id: string, successor: { id: string, prefix: string, hash: string, mode?: KeyMode }, options: { graceMs: number, maxLive: number, mail?: NewMail }): Promise<RollResult>
  /** The key with that SHA-256 digest, live or not; undefined when none. */
  findByHash (hash: string): Promise<ApiKeyRow | undefined>
  /** The key with that id, revoked or not; undefined when none. */
  findById (id: string): Promise<ApiKeyRow | undefined>
  /** Every key of the account, oldest first. */
  listByAccount (accountId: number): Promise<ApiKeyRow[]>
  /** A page of the account's live keys (oldest first) or of its ended ones, revoked or expired (most recently ended first). */
  pageByAccount (accountId: number, query: { live: boolean, limit: number, offset: number }): Promise<ApiKeyPage>
  /**
   * Marks the key revoked and records its invalidation with the next sequence number, in one
   * transaction; invalidations older than KEY_INVALIDATIONS_KEPT_MS are purged on the way.
   */
  revoke (id: string): Promise<RevokeResult>
  /** The sequence number of the latest invalidation; instances start reading invalidations from it. */
  revocationMarker (): Promise<number>
  /** The keys invalidated after `marker` (see KeyInvalidations); instances poll it. */
  invalidationsSince (marker: number): Promise<KeyInvalidations>
  /**
   * Live keys, not rolled, expiring in (now, until], whose lifetime is longer than `minLifetimeMs` and
   * whose owner has not been reminded: the candidates of the expiry reminder.
   */
  expiringUnreminded (now: Date, until: Date, minLifetimeMs: number, limit: number): Promise<ApiKeyRow[]>
  /** Marks the key reminded and writes the message, in one transaction, unless it was reminded already (false). */
  remindExpiry (id: string, at: Date, mail: NewMail): Promise<boolean>
  /** Writes last-used times, never moving one backwards. */
  recordLastUsed (uses: ReadonlyArray<{ id: string, at: Date }>): Promise<void>
}

/** 2xx stands for every answer below 400 (a 304 included), 4xx for 400 to 499, 5xx for the rest. */
export type UsageOutcome = '2xx' | '4xx' | '5xx'

/** Requests one key made in one hour, for one operation, with one outcome. */
export interface UsageCount {
  keyId: string
  /** The start of the hour (UTC). */
  hour: Date
  /** The operationId; `other` for a request that matched no operation. */
  operation: string
  outcome: UsageOutcome
  count: number
}

/** Per-key request counts by hour; every instance adds its own, and the rows hold the sums. */
export interface KeyUsageRepository {
  /** Adds the counts to what is stored (one transaction): concurrent adds from several instances sum. */
  add (counts: readonly UsageCount[]): Promise<void>
  /** The key's counts for the hours from `since` on, oldest first. */
  forKey (keyId: string, since: Date): Promise<UsageCount[]>
  /** Deletes the counts of hours before the date; returns how many rows. */
  deleteBefore (date: Date): Promise<number>
}

export const AUDIT_EVENTS = [
  'account_created', 'password_set', 'login_succeeded', 'login_failed',
  'key_created', 'key_rolled', 'key_revoked', 'key_expired', 'scope_denied',
  'two_step_enabled', 'two_step_disabled', 'sessions_ended',
  'verification_sent', 'email_verified', 'password_reset_requested', 'password_reset', 'key_expiry_reminded', 'sandbox_reset'
] as const
export type AuditEventType = typeof AUDIT_EVENTS[number]
export type AuditActor = 'cli' | 'portal' | 'api'

export interface NewAuditEvent {
  at: Date
  event: AuditEventType
  actor: AuditActor
  accountId: number | null
  keyId: string | null
  /** The client's address, where there is a client (the portal, the API). */
  address: string | null
  /** What else identifies the event (a successor key id, a scope): never a secret. */
  detail: string | null
  /** An event with a `once` text is recorded only if no event had the same text before (deduplication across instances). */
  once?: string
}

export interface AuditEvent extends Omit<NewAuditEvent, 'once'> {
  /** Increases with every event appended. */
  id: number
}

/** The append-only audit trail of accounts and keys (the database refuses to change or delete an event). */
export interface AuditRepository {
  /** Appends the event; false when an event with the same `once` text exists, and nothing was appended. */
  append (event: NewAuditEvent): Promise<boolean>
  /** The account's events, newest first: at most `limit`, with ids below `beforeId` when given. */
  page (accountId: number, query: { limit: number, beforeId?: number | undefined }): Promise<AuditEvent[]>
}

export interface SessionRow {
  accountId: number
  /** The synchronizer token every form of the session must send back. */
  csrfToken: string
  createdAt: Date
  expiresAt: Date
  /** The last request that moved the session's record (at most once a minute); null for a session started before it was kept. */
  lastSeenAt: Date | null
  /** The client address and User-Agent of the log-in that started it. */
  clientAddress: string | null
  userAgent: string | null
}

/** A session among its account's others, by the digest of its token. */
export interface AccountSessionRow extends SessionRow { tokenHash: string }

export interface NewSession {
  tokenHash: string
  accountId: number
  csrfToken: string
  createdAt: Date
  expiresAt: Date
  clientAddress?: string | null | undefined
  userAgent?: string | null | undefined
}

/** Portal log-in sessions, kept by the SHA-256 digest of their cookie token, never the token. */
export interface SessionRepository {
  create (session: NewSession): Promise<void>
  /** The session with that token digest, expired or not; undefined when none (never created, or deleted). */
  findByTokenHash (tokenHash: string): Promise<SessionRow | undefined>
  /** The account's sessions that have not expired at `now`, most recently started first. */
  listByAccount (accountId: number, now: Date): Promise<AccountSessionRow[]>
  /** Moves the expiry of a session and records when it was last seen. */
  extend (tokenHash: string, expiresAt: Date, lastSeenAt: Date): Promise<void>
  /** Ends one session (log-out); ending one that does not exist is not an error. */
  delete (tokenHash: string): Promise<void>
  /** Ends every session of the account (its password changed); returns how many. */
  deleteByAccount (accountId: number): Promise<number>
  /** Deletes sessions whose expiry is at or before the date; returns how many. */
  deleteExpired (now: Date): Promise<number>
}

/** An account's two-step verification: its sealed TOTP secret, on once `enabledAt` is set. */
export interface TwoStepRow {
  accountId: number
  secretSealed: string
  /** Null while a setup waits for its first code. */
  enabledAt: Date | null
  /** The last TOTP time step a code was accepted for. */
  lastStep: number
}

/** TOTP secrets and recovery codes (stored as SHA-256 digests only). */
export interface TwoStepRepository {
  find (accountId: number): Promise<TwoStepRow | undefined>
  /** Starts (or restarts) a setup with a new sealed secret; false when two-step verification is already on. */
  startSetup (accountId: number, secretSealed: string): Promise<boolean>
  /**
   * Turns the pending setup on, accepting `step` as its first code, and replaces the account's
   * recovery codes with these digests, and writes the mail, in one transaction; false when no setup with that secret waits.
   */
  enable (accountId: number, secretSealed: string, step: number, at: Date, recoveryCodeHashes: readonly string[], mail?: NewMail): Promise<boolean>
  /** Accepts a code of this time step unless one of this step or a later one was accepted before (atomic across instances). */
  useStep (accountId: number, step: number): Promise<boolean>
  /** The digests of the account's recovery codes not used yet. */
  unusedRecoveryCodes (accountId: number): Promise<string[]>
  /** Marks the recovery code used; false when it was already used (or is not the account's). */
  useRecoveryCode (accountId: number, codeHash: string, at: Date): Promise<boolean>
  /** Removes the secret and the recovery codes; false when there was nothing to remove. The mail is written only when something was. */
  remove (accountId: number, mail?: NewMail): Promise<boolean>
}

export interface LoginAttemptCount {
  /** Attempts in the current window, the one just recorded included. */
  attempts: number
  windowStartedAt: Date
}

export interface AttemptLockPolicy {
  /** A subject whose last counted attempt is older than this counts from zero again. */
  forgetBefore: Date
  /** How long counting a subject's nth attempt (1-based) locks it, in milliseconds; 0 for not at all. */
  lockMsAfter: (attempts: number) => number
}

export type LockedAttempt =
  | { allowed: true, attempts: number }
  | { allowed: false, lockedUntil: Date }

/**
 * Attempts per subject (log-ins, key changes), shared by every instance. Subjects name what they
 * count by a prefix (`address:`, `account:`, …); the two kinds of count below use distinct subjects.
 */
export interface LoginAttemptRepository {
  /**
   * Counts one attempt against each subject atomically, so concurrent attempts on any instance
   * each get their own count, in fixed windows: a subject whose window started before
   * windowStart starts a new window at now. Returns the counts in the order of the subjects.
   */
  record (subjects: readonly string[], now: Date, windowStart: Date): Promise<LoginAttemptCount[]>
  /**
   * Counts one attempt against the subject unless it is locked at `now`: counting the nth attempt
   * locks it until now + policy.lockMsAfter(n). Atomic across instances; a refused attempt changes
   * nothing, so refusals never lengthen a lock.
   */
  recordUnlessLocked (subject: string, now: Date, policy: AttemptLockPolicy): Promise<LockedAttempt>
  /** Gives one attempt back (never below zero). */
  forgive (subject: string): Promise<void>
  /** Forgets every attempt of the subject, and its lock. */
  clear (subject: string): Promise<void>
  /** Deletes subjects whose window started (or, for locks, whose last attempt came) before the date; returns how many. */
  deleteStaleBefore (windowStart: Date): Promise<number>
}

/** The database cannot be reached or did not answer in time; the request may be retried. */
export class StoreUnavailableError extends Error {
  constructor (readonly reason: unknown) {
    super('the database is unavailable', { cause: reason })
  }
}

/** Creating the animals would take an id beyond MAX_PET_ID: none was created. */
export class PetIdsExhaustedError extends Error {
  constructor () {
    super(`every animal id up to ${MAX_PET_ID} is taken`)
  }
}

/** The first of `count` consecutive ids after `lastId`, exactly; PetIdsExhaustedError when the last would exceed MAX_PET_ID. */
export function firstFreePetId (lastId: bigint | number | string | null | undefined, count: number): number {
  const last = BigInt(lastId ?? 0)
  if (last + BigInt(count) > BigInt(MAX_PET_ID)) throw new PetIdsExhaustedError()
  return Number(last) + 1
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

/** Accounts whose sandbox was reset, in the order of the resets (the same scheme as KeyInvalidations). */
export interface SandboxResets {
  marker: number
  /** Accounts reset after the marker asked from; undefined when some of those resets are no longer kept: forget every sandbox. */
  accountIds: number[] | undefined
}

/**
 * Each account's sandbox catalogue (test mode): the same reads as PetRepository, scoped to one account,
 * in tables of their own, with ids numbered per account from 1. Always read from the primary.
 */
export interface SandboxRepository {
  /** Creates the account's sandbox with these animals unless it exists; true when it was created. */
  ensureSeeded (accountId: number, pets: readonly NewPetRecord[]): Promise<boolean>
  /**
   * Stores a new animal in the account's sandbox unless it holds `maxPets` already ('full'); a claimed
   * idempotency key is completed in the same transaction. An account without a sandbox gets one, seeded, first.
   */
  insert (accountId: number, pet: NewPetRecord, claim: IdempotencyKeyRef | undefined, limits: { maxPets: number, seed: readonly NewPetRecord[] }): Promise<{ id: number } | 'full'>
  findById (accountId: number, id: number): Promise<PetRecord | undefined>
  listPage (accountId: number, query: ListPetsQuery): Promise<PetPage>
  existsAfter (accountId: number, status: PetStatus | undefined, afterId: number): Promise<boolean>
  /**
   * Empties the account's sandbox and seeds it again (ids from 1), forgets the idempotency keys of its
   * test keys, and records the reset with the next sequence number: one transaction.
   */
  reset (accountId: number, pets: readonly NewPetRecord[]): Promise<void>
  /** The sequence number of the latest reset. */
  resetMarker (): Promise<number>
  /** The accounts reset after `marker`; instances poll it. */
  resetsSince (marker: number): Promise<SandboxResets>
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
  readonly sandbox: SandboxRepository
  readonly accounts: AccountRepository
  readonly apiKeys: ApiKeyRepository
  readonly keyUsage: KeyUsageRepository
  readonly audit: AuditRepository
  readonly idempotency: IdempotencyRepository
  readonly sessions: SessionRepository
  readonly twoStep: TwoStepRepository
  readonly loginAttempts: LoginAttemptRepository
  readonly mailOutbox: MailOutboxRepository
  readonly accountTokens: AccountTokenRepository
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
