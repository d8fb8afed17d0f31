import { once } from 'node:events'
import type { FastifyInstance } from 'fastify'
import type { Redis } from 'ioredis'
import underPressure from '@fastify/under-pressure'
import { ApiError } from '../../core/errors.js'
import { sendError } from './errors.js'

const RATE_LIMIT_WINDOW_MS = 60_000
const REDIS_CONNECT_TIMEOUT_MS = 500
/** Beyond the connect timeout: the client's ready check (an INFO round trip) follows the connection. */
const REDIS_FIRST_CONNECTION_WAIT_MS = 2 * REDIS_CONNECT_TIMEOUT_MS
const POLICY = '"per-key"'

/** Right after start-up, compiling schemas and warming the JIT stalls the loop once; that is no overload. */
const WARM_UP_MS = 2000

/**
 * Requests that reach the server while it shuts down (on connections kept alive, or sent
 * behind one still being answered) get 503 and Retry-After in the API's error shape, before
 * anything else: Fastify's own answer for them (return503OnClosing) has a body of its own.
 */
export function registerDrainRefusal (app: FastifyInstance): void {
  let closing = false
  app.addHook('preClose', async () => { closing = true })
  app.addHook('onRequest', async (_request, reply) => {
    if (closing) sendError(reply, new ApiError('service_unavailable', 'the service is shutting down; retry shortly', { 'retry-after': '1' }))
  })
}

/** While requests are shed, one warning at most this often says how many and why. */
const SHED_WARNING_INTERVAL_MS = 1000

/**
 * Whether a request is shed for this event-loop delay: only for one measured above the limit.
 * @fastify/under-pressure reports Infinity when its delay histogram got no sample in the last
 * interval (100 ms at most), which says that the loop stalled, not that it stalled past the
 * limit: a test saw it after a 300 ms stall, which the default limit of 1000 ms must let pass.
 */
export function shedsFor (eventLoopDelayMs: number | undefined, limitMs: number): boolean {
  return eventLoopDelayMs !== undefined && Number.isFinite(eventLoopDelayMs) && eventLoopDelayMs > limitMs
}

/**
 * Sheds load with 503 and Retry-After while the event loop lags, so latency stays
 * bounded instead of every request queueing behind the backlog. Shedding is logged as a
 * warning, at most once a second, with the loop's delay and the requests shed since the last one.
 */
export async function registerLoadShedding (app: FastifyInstance, maxEventLoopDelayMs: number): Promise<void> {
  if (maxEventLoopDelayMs === 0) return
  let readyAt = Infinity
  let shedSinceWarning = 0
  let lastWarningAt = -Infinity
  app.addHook('onReady', async () => { readyAt = Date.now() })
  await app.register(underPressure, {
    maxEventLoopDelay: maxEventLoopDelayMs,
    sampleInterval: Math.min(100, maxEventLoopDelayMs),
    // Returning without sending lets the request through; once a reply is sent, Fastify runs no further hook.
    pressureHandler: (_request, reply, _type, eventLoopDelayMs) => {
      const now = Date.now()
      if (now - readyAt < WARM_UP_MS || !shedsFor(eventLoopDelayMs, maxEventLoopDelayMs)) return
      shedSinceWarning++
      if (now - lastWarningAt >= SHED_WARNING_INTERVAL_MS) {
        app.log.warn({ eventLoopDelayMs, limitMs: maxEventLoopDelayMs, shed: shedSinceWarning }, 'the event loop lags: shedding requests with 503')
        lastWarningAt = now
        shedSinceWarning = 0
      }
      sendError(reply, new ApiError('service_unavailable', 'the service is overloaded; retry shortly', { 'retry-after': '1' }))
    }
  })
}

/**
 * Optional per-key rate limit (RATE_LIMIT_PER_MINUTE), counted in Redis when REDIS_URL
 * is set so that every instance shares one budget. Registered after authentication:
 * only requests with a valid key are counted, by key. If Redis fails, requests are let
 * through rather than refused (availability over strictness), and the failure is logged.
 */
export async function registerRateLimit (app: FastifyInstance, options: { perMinute: number, redisUrl: string | undefined }): Promise<void> {
  if (options.perMinute === 0) return
  // Loaded only when used: every module a process loads stays in its memory.
  const { default: rateLimit } = await import('@fastify/rate-limit')
  const redis = options.redisUrl === undefined
    ? undefined
    : new (await import('ioredis')).Redis(options.redisUrl, { connectTimeout: REDIS_CONNECT_TIMEOUT_MS, maxRetriesPerRequest: 1, enableOfflineQueue: false, lazyConnect: false })
  redis?.on('error', (error) => app.log.warn({ err: error }, 'rate-limit Redis unavailable'))
  if (redis) {
    app.addHook('onClose', async () => { redis.disconnect() })
    await firstConnection(redis)
  }

  await app.register(rateLimit, {
    max: options.perMinute,
    timeWindow: RATE_LIMIT_WINDOW_MS,
    hook: 'onRequest',
    ...(redis && { redis, nameSpace: 'animal-store:rate-limit:' }),
    skipOnError: true,
    allowList: (request) => request.apiKey === null,
    keyGenerator: (request) => request.apiKey?.keyId ?? request.ip,
    errorResponseBuilder: (_request, context) =>
      new ApiError('rate_limited', `rate limit of ${context.max} requests per minute exceeded; retry in ${context.after}`)
  })

  // The plugin writes the X-RateLimit-* trio; clients get the IETF draft's two fields instead
  // (draft-ietf-httpapi-ratelimit-headers): the policy, and what is left of it.
  app.addHook('onSend', async (_request, reply) => {
    const limit = reply.getHeader('x-ratelimit-limit')
    if (limit === undefined) return
    const remaining = reply.getHeader('x-ratelimit-remaining')
    const reset = reply.getHeader('x-ratelimit-reset')
    reply.removeHeader('x-ratelimit-limit')
    reply.removeHeader('x-ratelimit-remaining')
    reply.removeHeader('x-ratelimit-reset')
    reply.header('ratelimit-policy', `${POLICY};q=${String(limit)};w=${RATE_LIMIT_WINDOW_MS / 1000}`)
    reply.header('ratelimit', `${POLICY};r=${String(remaining)};t=${String(reset)}`)
  })
}

/**
 * Until its first connection is ready the client refuses commands (no offline queue), and a
 * refused count lets the request through: an instance that answered before then would start
 * with requests it never counted. Start-up waits for the connection, or for its first failure
 * (a refused connection, or the connect timeout), after which requests pass uncounted, as
 * whenever Redis is unreachable, until the client reconnects.
 */
async function firstConnection (redis: Redis): Promise<void> {
  if (redis.status === 'ready') return
  await once(redis, 'ready', { signal: AbortSignal.timeout(REDIS_FIRST_CONNECTION_WAIT_MS) }).catch(() => {})
}

const EXPOSED_HEADERS = ['Link', 'Location', 'ETag', 'Deprecation', 'Sunset', 'X-Request-Id', 'Retry-After', 'RateLimit', 'RateLimit-Policy']

/** CORS stays off unless CORS_ORIGINS lists the browser origins allowed to call the API. */
export async function registerCors (app: FastifyInstance, origins: string[]): Promise<void> {
  if (origins.length === 0) return
  const { default: cors } = await import('@fastify/cors')
  await app.register(cors, {
    origin: origins,
    methods: ['GET', 'HEAD', 'POST'],
    allowedHeaders: ['Authorization', 'Content-Type', 'Idempotency-Key', 'If-None-Match', 'X-Request-Id'],
    exposedHeaders: EXPOSED_HEADERS,
    maxAge: 600,
    strictPreflight: true
  })
}
