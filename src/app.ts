import { randomBytes } from 'node:crypto'
import { createServer, METHODS } from 'node:http'
import type { Ajv } from 'ajv'
import Fastify, { LogController, type FastifyBaseLogger, type FastifyInstance, type FastifyServerOptions } from 'fastify'
import type { LoggerOptions } from 'pino'
import type { Config } from './config.js'
import { createCursorCodec } from './core/cursor.js'
import { authenticate, isUnderV1, registerAuth } from './http/plugins/auth.js'
import { registerEarlyNotFound, registerErrorHandling, sendError, toApiError } from './http/plugins/errors.js'
import { MAX_BODY_BYTES, registerJsonBodyParser } from './http/plugins/json-body.js'
import { registerMetrics } from './http/plugins/metrics.js'
import { registerOpenApi } from './http/plugins/openapi.js'
import { commonHeaders, registerRequestContext, requestIdOf } from './http/plugins/request-context.js'
import { registerCors, registerDrainRefusal, registerLoadShedding, registerRateLimit } from './http/plugins/protection.js'
import { docsRoutes } from './http/routes/docs.js'
import { healthRoutes } from './http/routes/health.js'
import { petRoutes } from './http/routes/pets.js'
import { tolerantUrl } from './http/tolerant-url.js'
import { FrontGate } from './http/front-gate.js'
import { HotCreates } from './http/hot-creates.js'
import { HotReads } from './http/hot-reads.js'
import { PetReads } from './http/pet-reads.js'
import { portalRoutes } from './portal/routes.js'
import { storeOrderRoutes } from './http/routes/store-orders.js'
import { IdempotencyKeys } from './services/idempotency-keys.js'
import { KeyVerifier } from './services/key-verifier.js'
import { Metrics } from './services/metrics.js'
import { PetCatalog } from './services/pet-catalog.js'
import { instrumentStore } from './storage/instrumented-store.js'
import type { Store } from './storage/store.js'

export interface BuildAppOptions {
  config: Readonly<Config>
  store: Store
  /** A ready logger; by default one is built from config.logLevel. */
  logger?: FastifyBaseLogger
  /** The hot read and create paths in front of the framework (on unless a per-request protection is); tests turn them off to compare. */
  hotPaths?: boolean
}

export function loggerOptions (config: Readonly<Config>): LoggerOptions {
  return {
    level: config.logLevel,
    // Keys travel only in this header; nothing else in a request carries secrets.
    redact: { paths: ['req.headers.authorization', 'headers.authorization', 'authorization'], censor: '[redacted]' }
  }
}

/** Builds the HTTP application around an open, migrated store; never listens. */
export async function buildApp ({ config, store: rawStore, logger, hotPaths: hotPathsWanted = true }: BuildAppOptions): Promise<FastifyInstance> {
  const metrics = new Metrics(rawStore)
  const store = instrumentStore(rawStore, (operation, seconds) => metrics.databaseDuration.record(seconds, operation))
  // The verifier is needed by frameworkErrors, before the app (and its logger) exists.
  const late: { log?: FastifyBaseLogger } = {}
  const verifier = new KeyVerifier(store.apiKeys, (error) => late.log?.error({ err: error }, 'API key bookkeeping failed'))
  verifier.onLookup = (hit) => { if (hit) metrics.keyCacheHits++; else metrics.keyCacheMisses++ }
  await verifier.start()

  const cursorSecret = await store.setting('cursor_secret', () => randomBytes(32).toString('base64url'))
  const catalog = new PetCatalog(store.pets)
  rawStore.onPrimaryChange?.(() => { catalog.forget() })
  const reads = new PetReads(catalog, createCursorCodec(cursorSecret), config.publicBaseUrl ?? '/v1')
  const frontGate = new FrontGate(config.metricsEnabled ? metrics : undefined, verifier)
  const hotPaths = [new HotReads({ gate: frontGate, reads }), new HotCreates({ gate: frontGate, catalog })]

  const options: FastifyServerOptions = {
    bodyLimit: MAX_BODY_BYTES,
    requestIdHeader: false,
    // One access-log line per request is written by our onResponse hook instead of Fastify's two.
    logController: new LogController({ requestIdLogLabel: 'requestId', disableRequestLogging: true }),
    genReqId: requestIdOf,
    rewriteUrl: (request) => tolerantUrl(request.url ?? '/'),
    // Long path segments reach the route, whose own validation names the parameter.
    routerOptions: { maxParamLength: 2048 },
    // Errors raised before routing (a malformed URL) get the API's error shape, after authentication like any other request.
    frameworkErrors: function onFrameworkError (error, request, reply) {
      const answer = async (): Promise<never> => {
        if (isUnderV1(request.url)) await authenticate(verifier, request.headers.authorization)
        throw error
      }
      reply.headers(commonHeaders(request.id))
      answer().catch((failure: Error) => sendError(reply, toApiError(failure, request)))
    },
    // Refused by registerDrainRefusal instead, in the API's error shape.
    return503OnClosing: false,
    // X-Forwarded-* are believed only from the proxies TRUST_PROXY names (request.ip, request.protocol, request.host).
    ...(config.trustProxy.length > 0 && { trustProxy: config.trustProxy }),
    serverFactory: (handler) => {
      const server = createServer({
        headersTimeout: config.headersTimeoutMs,
        requestTimeout: config.requestTimeoutMs,
        keepAliveTimeout: config.keepAliveTimeoutMs,
        // Node checks those deadlines on this interval; the default (30 s) would let slow clients linger.
        connectionsCheckingInterval: 1000
      }, frontGate.inFrontOf(handler, hotPaths))
      server.maxConnections = config.maxConnections
      return server
    },
    forceCloseConnections: 'idle',
    ajv: {
      // CONTRACT.md: no type coercion, no silently removed properties.
      customOptions: { coerceTypes: false, removeAdditional: false, useDefaults: true, allErrors: false, verbose: true },
      plugins: [(ajv: Ajv) => ajv.addFormat('int64', { type: 'number', validate: (value: number) => Number.isInteger(value) })]
    }
  }
  const app = logger ? Fastify({ ...options, loggerInstance: logger }) : Fastify({ ...options, logger: loggerOptions(config) })

  late.log = app.log
  // Every route sends bytes it encoded itself (JSON.stringify or cached Buffers), so the response
  // schemas document the API and are never used to serialise: no serialiser is compiled at start-up.
  app.setSerializerCompiler(() => (data) => JSON.stringify(data))
  // Node accepts every method it knows (PROPFIND, ACL, QUERY …); routing them all lets a known
  // path answer 405 with Allow instead of 404. CONNECT never reaches a request handler.
  for (const method of METHODS) {
    if (method !== 'CONNECT' && !app.supportedMethods.includes(method)) app.addHttpMethod(method, { hasBody: true })
  }
  app.addHook('onClose', async () => verifier.close())

  registerRequestContext(app)
  registerErrorHandling(app)
  if (config.metricsEnabled) await registerMetrics(app, { metrics, token: config.metricsToken })
  // Order of the onRequest hooks: refuse while shutting down, shed load, answer CORS preflights, authenticate, then count against the key's limit.
  registerDrainRefusal(app)
  await registerLoadShedding(app, config.loadShedEventLoopDelayMs)
  await registerCors(app, config.corsOrigins)
  registerAuth(app, verifier)
  await registerRateLimit(app, { perMinute: config.rateLimitPerMinute, redisUrl: config.redisUrl })
  registerEarlyNotFound(app)
  registerJsonBodyParser(app)
  await registerOpenApi(app, { publicBaseUrl: config.publicBaseUrl, stagingBaseUrl: config.stagingBaseUrl })

  const idempotencyKeys = new IdempotencyKeys(store.idempotency, (error) => app.log.error({ err: error }, 'purging idempotency keys failed'))
  app.addHook('onClose', async () => idempotencyKeys.close())
  await app.register(petRoutes, { catalog, reads, idempotencyKeys })
  await app.register(storeOrderRoutes)
  await app.register(docsRoutes)
  await app.register(healthRoutes, { store })
  await app.register(portalRoutes, { prefix: '/portal', store, publicBaseUrl: config.publicBaseUrl })

  // The hot paths skip the framework's hooks, so they stay shut while a per-request protection is on.
  if (hotPathsWanted && config.rateLimitPerMinute === 0 && config.corsOrigins.length === 0) {
    app.addHook('onReady', async () => {
      frontGate.log = app.log
      if (app.hasDecorator('isUnderPressure')) frontGate.isUnderPressure = () => app.isUnderPressure()
      frontGate.open = true
    })
    app.addHook('preClose', async () => { frontGate.open = false })
  }
  return app
}
