import { randomBytes } from 'node:crypto'
import type { FastifyBaseLogger } from 'fastify'
import { pino, type Logger, type LoggerOptions } from 'pino'
import type { Redis } from 'ioredis'
import type { Config } from '../config.js'
import { createCursorCodec } from '../core/cursor.js'
import { PetReads } from '../http/pet-reads.js'
import type { PipelineDeps } from '../http/pipeline.js'
import { AuditTrail } from '../services/audit-trail.js'
import { IdempotencyKeys } from '../services/idempotency-keys.js'
import { KeyVerifier } from '../services/key-verifier.js'
import { Metrics } from '../services/metrics.js'
import { PetCatalog } from '../services/pet-catalog.js'
import { RateLimiter } from '../services/rate-limiter.js'
import { Readiness } from '../services/readiness.js'
import { SandboxCatalog } from '../services/sandbox-catalog.js'
import { UsageRecorder } from '../services/usage-recorder.js'
import { instrumentStore } from '../storage/instrumented-store.js'
import type { Store } from '../storage/store.js'
import { apiRoutes } from './routes.js'
import { FrameworkHandler } from './framework-handler.js'

export interface BuildAppOptions {
  config: Readonly<Config>
  store: Store
  /** A ready logger; by default one is built from config.logLevel. */
  logger?: FastifyBaseLogger
}

export function loggerOptions (config: Readonly<Config>): LoggerOptions {
  return {
    level: config.logLevel,
    // Keys travel only in this header (the access log redacts key-like query values itself).
    redact: { paths: ['req.headers.authorization', 'headers.authorization', 'authorization'], censor: '[redacted]' }
  }
}

/** What the request's steps and the framework's routes share: built once, around an open, migrated store. */
export interface AppServices {
  config: Readonly<Config>
  /** The store as the service uses it: every query timed for the metrics. */
  store: Store
  log: Logger
  metrics: Metrics
  /** The dependencies /readyz names beside the database. */
  readiness: Readiness
  /** The API's OpenAPI document, as the reference page serves it. */
  document: unknown
  /** Every account's sandbox (test mode): the portal resets one through it. */
  sandbox: SandboxCatalog
  /** What pipeline() builds the steps from; its framework is attached when the server is built (app/server.ts). */
  pipelineDeps: PipelineDeps & { framework: FrameworkHandler }
  /** Stops the services' timers and writes out what they still hold. */
  close: () => Promise<void>
}

const REDIS_CONNECT_TIMEOUT_MS = 500
/** Beyond the connect timeout: the client's ready check (an INFO round trip) follows the connection. */
const REDIS_FIRST_CONNECTION_WAIT_MS = 2 * REDIS_CONNECT_TIMEOUT_MS

/**
 * Resolves once the client is ready, or at the latest after REDIS_FIRST_CONNECTION_WAIT_MS. A plain
 * timer rather than events.once with AbortSignal.timeout(): an AbortSignal timer left behind slows
 * every later request of the process.
 */
async function firstConnection (redis: Redis): Promise<void> {
  if (redis.status === 'ready') return
  let timer: NodeJS.Timeout | undefined
  await new Promise<void>((resolve) => {
    timer = setTimeout(resolve, REDIS_FIRST_CONNECTION_WAIT_MS)
    redis.once('ready', resolve)
  })
  clearTimeout(timer)
}

/**
 * The rate limiter of RATE_LIMIT_PER_MINUTE, sharing its counts through REDIS_URL when set.
 * Start-up waits (at most about a second) for the first connection to Redis, so that an
 * instance counts together with the others from its first request.
 */
async function rateLimiterOf (config: Readonly<Config>, log: FastifyBaseLogger, limit = config.rateLimitPerMinute, prefix?: string): Promise<RateLimiter | undefined> {
  if (limit === 0) return undefined
  let redis: Redis | undefined
  if (config.redisUrl !== undefined) {
    // Loaded only when used: every module a process loads stays in its memory.
    const { Redis } = await import('ioredis')
    redis = new Redis(config.redisUrl, { connectTimeout: REDIS_CONNECT_TIMEOUT_MS, maxRetriesPerRequest: 1, enableOfflineQueue: false })
    // Connection errors surface as failed reconciliations, logged once per outage by the limiter's events.
    redis.on('error', () => {})
    await firstConnection(redis)
  }
  const limiter = new RateLimiter(limit, redis, {
    onSharedChange: (shared, error) => {
      if (shared) log.info('rate limits are shared through Redis')
      else log.warn({ err: error }, 'Redis is unreachable: rate limits are counted per instance until it answers')
    }
  }, prefix)
  if (redis !== undefined && !limiter.shared) log.warn('Redis did not answer at start-up: rate limits are counted per instance until it answers')
  return limiter
}

/** Builds the services around an open, migrated store: key verification, caches, the API's operations and document. */
export async function appServices ({ config, store: rawStore, logger }: BuildAppOptions): Promise<AppServices> {
  const log = (logger ?? pino(loggerOptions(config))) as Logger
  const metrics = new Metrics(rawStore)
  const store = instrumentStore(rawStore, (operation, seconds) => metrics.databaseDuration.record(seconds, operation))
  const verifier = new KeyVerifier(store.apiKeys, (error) => log.error({ err: error }, 'API key bookkeeping failed'))
  verifier.onLookup = (hit) => { if (hit) metrics.keyCacheHits++; else metrics.keyCacheMisses++ }
  await verifier.start()
  const limiter = await rateLimiterOf(config, log)
  if (limiter !== undefined) metrics.rateLimitShared = () => limiter.shared
  const readiness = new Readiness()
  if (limiter?.redisUp !== undefined) readiness.report('redis', () => ({ state: limiter.redisUp === true ? 'up' : 'down', for: 'rate limits' }))
  readiness.report('mailOutbox', async () => ({ state: 'up', pending: await store.mailOutbox.pendingCount() }))
  // Test keys are counted apart, under their own limit: test traffic never spends a live key's budget.
  const sandboxLimiter = await rateLimiterOf(config, log, config.sandboxRateLimitPerMinute, 'animal-store:sandbox-rate-limit:') as RateLimiter

  const cursorSecret = await store.setting('cursor_secret', () => randomBytes(32).toString('base64url'))
  const catalog = new PetCatalog(store.pets)
  const cursors = createCursorCodec(cursorSecret)
  const linkBase = config.publicBaseUrl ?? '/v1'
  const sandbox = new SandboxCatalog(store.sandbox, { maxPets: config.sandboxMaxPets, cursors, linkBase, onError: (error) => log.error({ err: error }, 'reading sandbox resets failed') })
  await sandbox.start()
  rawStore.onPrimaryChange?.(() => { catalog.forget(); sandbox.forget() })
  const reads = new PetReads(catalog, cursors, linkBase)
  const idempotencyKeys = new IdempotencyKeys(store.idempotency, (error) => log.error({ err: error }, 'purging idempotency keys failed'))
  const audit = new AuditTrail(store.audit, (error) => log.error({ err: error }, 'appending to the audit trail failed'))
  const usage = new UsageRecorder(store.keyUsage, (error) => log.error({ err: error }, 'writing key usage failed'))
  const { routes, document } = await apiRoutes(config, { catalog, reads, idempotencyKeys, sandbox })
  const close = async (): Promise<void> => {
    limiter?.close()
    sandboxLimiter.close()
    sandbox.close()
    idempotencyKeys.close()
    await Promise.all([verifier.close(), usage.close()])
  }
  const framework = new FrameworkHandler()
  const pipelineDeps = { config, verifier, audit, usage, limiter, sandboxLimiter, metrics: config.metricsEnabled ? metrics : undefined, routes, log, framework }
  return { config, store, log, metrics, readiness, document, sandbox, pipelineDeps, close }
}
