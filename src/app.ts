import { randomBytes } from 'node:crypto'
import { createServer, METHODS } from 'node:http'
import swagger, { type StaticDocumentSpec } from '@fastify/swagger'
import Fastify, { LogController, type FastifyBaseLogger, type FastifyInstance, type FastifyServerOptions } from 'fastify'
import type { Redis } from 'ioredis'
import { pino, type Logger, type LoggerOptions } from 'pino'
import type { Config } from './config.js'
import { createCursorCodec } from './core/cursor.js'
import { ApiRoutes } from './http/api-routes.js'
import { MAX_PATH_SEGMENT_LENGTH, notFoundError, registerErrorHandler, registerNotFoundHandler, sendError, toApiError } from './http/errors.js'
import { MAX_BODY_BYTES } from './http/json-body.js'
import { PetReads } from './http/pet-reads.js'
import { parserRefusals } from './http/parser-refusals.js'
import { pipeline, requestListener, setUpPipeline, type PipelineDeps, type Step } from './http/pipeline.js'
import { describeApi, documentJson } from './http/plugins/openapi.js'
import { docsRoutes } from './http/routes/docs.js'
import { healthRoutes } from './http/routes/health.js'
import { metricsRoutes } from './http/routes/metrics.js'
import { openApiDocumentOperation } from './http/routes/openapi-document.js'
import { petOperations } from './http/routes/pets.js'
import { rootRoutes } from './http/routes/root.js'
import { storeOrderOperations } from './http/routes/store-orders.js'
import { tolerantUrl } from './http/tolerant-url.js'
import { isUnderPortal, portalRoutes, sendPortalFrameworkError } from './portal/routes.js'
import { AuditTrail } from './services/audit-trail.js'
import { IdempotencyKeys } from './services/idempotency-keys.js'
import { BatchedLogDestination } from './services/log-destination.js'
import { KeyVerifier } from './services/key-verifier.js'
import { Metrics } from './services/metrics.js'
import { PetCatalog } from './services/pet-catalog.js'
import { RateLimiter } from './services/rate-limiter.js'
import { UsageRecorder } from './services/usage-recorder.js'
import { instrumentStore } from './storage/instrumented-store.js'
import type { Store } from './storage/store.js'

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

/**
 * The service's logger: JSON lines on stdout, written in batches on the event loop without waiting
 * for the reader (services/log-destination.ts). What is still gathered is written out at exit.
 */
export function serviceLogger (config: Readonly<Config>): Logger {
  return pino(loggerOptions(config), new BatchedLogDestination())
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
async function rateLimiterOf (config: Readonly<Config>, log: FastifyBaseLogger): Promise<RateLimiter | undefined> {
  if (config.rateLimitPerMinute === 0) return undefined
  let redis: Redis | undefined
  if (config.redisUrl !== undefined) {
    // Loaded only when used: every module a process loads stays in its memory.
    const { Redis } = await import('ioredis')
    redis = new Redis(config.redisUrl, { connectTimeout: REDIS_CONNECT_TIMEOUT_MS, maxRetriesPerRequest: 1, enableOfflineQueue: false })
    // Connection errors surface as failed reconciliations, logged once per outage by the limiter's events.
    redis.on('error', () => {})
    await firstConnection(redis)
  }
  const limiter = new RateLimiter(config.rateLimitPerMinute, redis, {
    onSharedChange: (shared, error) => {
      if (shared) log.info('rate limits are shared through Redis')
      else log.warn({ err: error }, 'Redis is unreachable: rate limits are counted per instance until it answers')
    }
  })
  if (redis !== undefined && !limiter.shared) log.warn('Redis did not answer at start-up: rate limits are counted per instance until it answers')
  return limiter
}

/** What the request's steps and the framework's routes share: built once, around an open, migrated store. */
export interface AppServices {
  config: Readonly<Config>
  /** The store as the service uses it: every query timed for the metrics. */
  store: Store
  log: FastifyBaseLogger
  metrics: Metrics
  idempotencyKeys: IdempotencyKeys
  /** The API's OpenAPI document, as the reference page serves it. */
  document: unknown
  /** What pipeline() builds the steps from. */
  pipelineDeps: PipelineDeps
}

/** Builds the services around an open, migrated store: key verification, caches, the API's operations and document. */
export async function appServices ({ config, store: rawStore, logger }: BuildAppOptions): Promise<AppServices> {
  const log = logger ?? pino(loggerOptions(config))
  const metrics = new Metrics(rawStore)
  const store = instrumentStore(rawStore, (operation, seconds) => metrics.databaseDuration.record(seconds, operation))
  const verifier = new KeyVerifier(store.apiKeys, (error) => log.error({ err: error }, 'API key bookkeeping failed'))
  verifier.onLookup = (hit) => { if (hit) metrics.keyCacheHits++; else metrics.keyCacheMisses++ }
  await verifier.start()
  const limiter = await rateLimiterOf(config, log)
  if (limiter !== undefined) metrics.rateLimitShared = () => limiter.shared

  const cursorSecret = await store.setting('cursor_secret', () => randomBytes(32).toString('base64url'))
  const catalog = new PetCatalog(store.pets)
  rawStore.onPrimaryChange?.(() => { catalog.forget() })
  const reads = new PetReads(catalog, createCursorCodec(cursorSecret), config.publicBaseUrl ?? '/v1')
  const idempotencyKeys = new IdempotencyKeys(store.idempotency, (error) => log.error({ err: error }, 'purging idempotency keys failed'))
  const audit = new AuditTrail(store.audit, (error) => log.error({ err: error }, 'appending to the audit trail failed'))
  const usage = new UsageRecorder(store.keyUsage, (error) => log.error({ err: error }, 'writing key usage failed'))

  // The API: its operations, and their document, built from their schemas once.
  let documentText = ''
  const routes = new ApiRoutes([
    ...petOperations({ catalog, reads, idempotencyKeys }),
    ...storeOrderOperations(),
    openApiDocumentOperation(() => documentText)
  ])
  const document = await describeApi(routes.operations, { publicBaseUrl: config.publicBaseUrl, stagingBaseUrl: config.stagingBaseUrl })
  documentText = documentJson(document)
  const pipelineDeps = { config, verifier, audit, usage, limiter, metrics: config.metricsEnabled ? metrics : undefined, routes, log: log as Logger }
  return { config, store, log, metrics, idempotencyKeys, document, pipelineDeps }
}

/** Builds the HTTP application around an open, migrated store; never listens. */
export async function buildApp (options: BuildAppOptions): Promise<FastifyInstance> {
  const services = await appServices(options)
  // Every request the server receives goes through these steps (http/pipeline.ts).
  return await serverOf(services, pipeline(services.pipelineDeps))
}

/**
 * The server: a request listener that runs every request through `steps` (http/pipeline.ts), and
 * the framework it hands what lies outside /v1, with the routes there. Never listens.
 */
export async function serverOf (services: AppServices, steps: readonly Step[]): Promise<FastifyInstance> {
  const { config, store, log, metrics, idempotencyKeys, document } = services
  const { verifier, usage, limiter, routes } = services.pipelineDeps
  const handleRequest = requestListener(steps, log as Logger)

  // What Node's HTTP parser refuses before the pipeline sees a request, and CONNECT.
  const refusals = parserRefusals(log as Logger, (status) => { metrics.refusedByParser(status) })

  // The framework answers what the pipeline hands it: everything outside /v1.
  const options: FastifyServerOptions = {
    bodyLimit: MAX_BODY_BYTES,
    requestIdHeader: false,
    // One access-log line per request is written by the pipeline's access-log step instead of Fastify's two.
    logController: new LogController({ requestIdLogLabel: 'requestId', disableRequestLogging: true }),
    rewriteUrl: (request) => tolerantUrl(request.url ?? '/'),
    routerOptions: { maxParamLength: MAX_PATH_SEGMENT_LENGTH },
    // Errors raised before routing (a malformed URL): the portal's error page, the JSON error shape elsewhere.
    frameworkErrors: function onFrameworkError (error, request, reply) {
      // People read the portal's errors: its error page, not the API's JSON.
      if (isUnderPortal(request.url)) {
        sendPortalFrameworkError(error, request, reply)
        return
      }
      sendError(reply, toApiError(error, request))
    },
    // Refused by the pipeline's shutdown refusal instead, in the API's error shape.
    return503OnClosing: false,
    clientErrorHandler: refusals.onClientError,
    // X-Forwarded-* are believed only from the proxies TRUST_PROXY names (request.ip, request.protocol, request.host).
    ...(config.trustProxy.length > 0 && { trustProxy: config.trustProxy }),
    serverFactory: () => {
      const server = createServer({
        headersTimeout: config.headersTimeoutMs,
        requestTimeout: config.requestTimeoutMs,
        keepAliveTimeout: config.keepAliveTimeoutMs,
        // Node checks those deadlines on this interval; the default (30 s) would let slow clients linger.
        connectionsCheckingInterval: 1000
      }, handleRequest)
      // No automatic 100 Continue: the pipeline sends it once the request is authenticated and routed.
      server.on('checkContinue', handleRequest)
      server.on('connect', refusals.onConnect)
      server.maxConnections = config.maxConnections
      return server
    },
    forceCloseConnections: 'idle'
  }
  const app = Fastify({ ...options, loggerInstance: log })
  app.addHook('onClose', async () => {
    limiter?.close()
    idempotencyKeys.close()
    await Promise.all([verifier.close(), usage.close()])
  })

  // Every route sends bytes it encoded itself: no serialiser is compiled at start-up.
  app.setSerializerCompiler(() => (data) => JSON.stringify(data))
  // Node accepts every method it knows (PROPFIND, ACL, QUERY …): the framework routes them all, to its 404.
  for (const method of METHODS) {
    if (method !== 'CONNECT' && !app.supportedMethods.includes(method)) app.addHttpMethod(method, { hasBody: true })
  }
  // No route of the framework reads a body but the portal's forms, whose plugin parses them: any other body is left unread.
  app.removeAllContentTypeParsers()
  app.addContentTypeParser('*', function leaveBodyUnread (_request, _payload, done) { done(null, undefined) })
  registerErrorHandler(app)
  // An unknown path is answered before anything reads or judges its body, as under /v1.
  app.addHook('onRequest', function answerUnknownRoute (request, _reply, done) {
    done(request.is404 ? notFoundError(request, routes) : undefined)
  })
  await setUpPipeline(steps, app)
  registerNotFoundHandler(app, routes)

  // Outside /v1: the reference page, the probes, the metrics and the developer portal.
  // The reference page's plugin reads the document through @fastify/swagger: the same one, given as it is.
  await app.register(swagger, { mode: 'static', specification: { document } as StaticDocumentSpec })
  await app.register(docsRoutes)
  await app.register(rootRoutes)
  await app.register(healthRoutes, { store })
  if (config.metricsEnabled && config.metricsToken !== undefined) await app.register(metricsRoutes, { metrics, token: config.metricsToken })
  else if (config.metricsEnabled) log.info('GET /metrics is not served: set METRICS_TOKEN to let scrapers that send it read the metrics')
  await app.register(portalRoutes, { prefix: '/portal', store, publicBaseUrl: config.publicBaseUrl })
  return app
}
