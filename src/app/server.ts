import { createServer, METHODS, type IncomingMessage, type Server } from 'node:http'
import Fastify, { LogController, type FastifyBaseLogger, type FastifyInstance, type FastifyServerOptions } from 'fastify'
import type { Logger } from 'pino'
import type { Config } from '../config.js'
import type { ApiRoutes } from '../http/api-routes.js'
import { MAX_PATH_SEGMENT_LENGTH, notFoundError, registerErrorHandler, registerNotFoundHandler, sendError, toApiError } from '../http/errors.js'
import { bodyLeftUnread, handedOver } from '../http/exchange.js'
import { MAX_BODY_BYTES } from '../http/json-body.js'
import { parserRefusals } from '../http/parser-refusals.js'
import { requestListener, runLifecycle, type Step } from '../http/pipeline.js'
import { RequestLogger } from '../http/request-logger.js'
import { requestIdOf } from '../http/steps/request-context.js'
import { tolerantUrl } from '../http/tolerant-url.js'
import { isUnderPortal, sendPortalFrameworkError } from '../portal/routes.js'
import { registerFrameworkRoutes } from './routes.js'
import type { AppServices } from './services.js'

type Refusals = ReturnType<typeof parserRefusals>
type Listener = ReturnType<typeof requestListener>

/** The HTTP server: every request it receives goes to the pipeline (http/pipeline.ts), which is its only request listener. */
function httpServer (config: Readonly<Config>, handleRequest: Listener, refusals: Refusals): Server {
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
}

/** How the framework answers what the pipeline hands it: everything outside /v1. */
function frameworkOptions (config: Readonly<Config>, log: Logger, refusals: Refusals): FastifyServerOptions {
  return {
    bodyLimit: MAX_BODY_BYTES,
    requestIdHeader: false,
    // The request keeps the id and the trace the pipeline gave it (steps/request-context.ts).
    genReqId: (raw) => handedOver.get(raw)?.id ?? requestIdOf(raw),
    childLoggerFactory: function requestLogger (logger, bindings, _options, raw) {
      const traceparent = (raw as IncomingMessage).headers.traceparent
      const span = handedOver.get(raw as IncomingMessage)?.span
      return new RequestLogger(logger as Logger, String(bindings.requestId), typeof traceparent === 'string' ? traceparent : undefined, span) as unknown as FastifyBaseLogger
    },
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
    forceCloseConnections: 'idle',
    loggerInstance: log
  }
}

/** What the framework's routes read and answer: every method Node knows, no body but the portal's forms, bytes encoded by the routes. */
function answerAsTheRoutesDo (app: FastifyInstance, routes: ApiRoutes): void {
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
  // As the pipeline's own answers: one written before the request's body was read whole closes the
  // connection, which Node would otherwise keep by reading and discarding all of that body. The
  // portal's forms are read before their answer, and keep their connection.
  app.addHook('onSend', function closeIfBodyUnread (request, reply, payload, done) {
    if (bodyLeftUnread(request.raw)) void reply.header('connection', 'close')
    done(null, payload)
  })
  // An unknown path is answered before anything reads or judges its body, as under /v1; a known one
  // tells the request's exchange which route matched (its metrics' label).
  app.addHook('onRequest', function matchRoute (request, _reply, done) {
    if (request.is404) {
      done(notFoundError(request, routes))
      return
    }
    const exchange = handedOver.get(request.raw)
    if (exchange !== undefined) exchange.frameworkRoute = request.routeOptions.url
    done()
  })
  registerNotFoundHandler(app, routes)
}

/**
 * The server: a request listener that runs every request through `steps` (http/pipeline.ts), and
 * the framework, the one handler at the end of the list, with its routes outside /v1. The server's
 * lifecycle runs the steps' own. Never listens.
 */
export async function serverOf (services: AppServices, steps: readonly Step[]): Promise<FastifyInstance> {
  const { config, log, metrics, pipelineDeps: { routes, framework } } = services
  // What Node's HTTP parser refuses before the pipeline sees a request, and CONNECT.
  const refusals = parserRefusals(log, (status) => { metrics.refusedByParser(status) })
  const app = Fastify({
    ...frameworkOptions(config, log, refusals),
    serverFactory: (frameworkHandler) => {
      framework.attach(frameworkHandler)
      return httpServer(config, requestListener(steps, log), refusals)
    }
  })
  app.addHook('onReady', async () => { runLifecycle(steps, 'onReady') })
  app.addHook('preClose', function beginClosing (done) {
    runLifecycle(steps, 'onClosing')
    done()
  })
  app.addHook('onClose', async () => {
    runLifecycle(steps, 'onClosed')
    await services.close()
  })
  answerAsTheRoutesDo(app, routes)
  await registerFrameworkRoutes(app, services)
  return app
}
