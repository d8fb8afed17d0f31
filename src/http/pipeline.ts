import type { IncomingMessage, ServerResponse } from 'node:http'
import { finished } from 'node:stream'
import type { Logger } from 'pino'
import type { Config } from '../config.js'
import { ApiError } from '../core/errors.js'
import type { AuditTrail } from '../services/audit-trail.js'
import type { KeyVerifier } from '../services/key-verifier.js'
import type { Metrics } from '../services/metrics.js'
import type { RateLimiter } from '../services/rate-limiter.js'
import { activeTracer } from '../services/tracing.js'
import type { UsageRecorder } from '../services/usage-recorder.js'
import { clientAddressOf } from './client-address.js'
import { failureToApiError } from './errors.js'
import { bodyLeftUnread, errorAnswer, Exchange, type Answer, type HandedOver } from './exchange.js'
import type { ApiRoutes } from './api-routes.js'
import { accessLog } from './steps/access-log.js'
import { authentication } from './steps/authentication.js'
import { authorization } from './steps/authorization.js'
import { commonHeaders } from './steps/common-headers.js'
import { cors } from './steps/cors.js'
import { drainRefusal } from './steps/drain-refusal.js'
import { handler } from './steps/handler.js'
import { keyUsage } from './steps/key-usage.js'
import { loadShedding } from './steps/load-shedding.js'
import { messageFraming } from './steps/message-framing.js'
import { metricsStep } from './steps/metrics.js'
import { rateLimit } from './steps/rate-limit.js'
import { requestContext } from './steps/request-context.js'
import { routing } from './steps/routing.js'
import { tracing } from './steps/tracing.js'
import { validation } from './steps/validation.js'
import { tolerantUrl } from './tolerant-url.js'

/** What a step's onRequest says: go on (undefined), or here is the answer. */
export type Outcome = Answer | HandedOver | undefined

/**
 * One step of the request pipeline: its part in each request, and in the server's lifecycle. A
 * request meets the steps in list order, in three phases:
 * 1. onRequest, as the request arrives: each step goes on (returns nothing), answers (returns the
 *    answer, or throws an ApiError) or waits (returns a promise of either). Once a step has
 *    answered, no later step's onRequest runs.
 * 2. onAnswer, whichever step answered, just before the answer is written: adds header fields.
 * 3. onDone, once the answer is written or the client has gone away: every step's, whichever answered.
 * A step knows nothing of the framework: the server (app/server.ts) runs the lifecycle's moments
 * of every step, in list order.
 */
export interface Step {
  readonly name: string
  /** `every request`: the API, the portal, the reference page and the probes alike; `api`: the API's requests (under /v1) only. */
  readonly scope: 'every request' | 'api'
  /** Once, as the server gets ready to take requests. */
  readonly onReady?: () => void
  /** Once, as shutting down begins: before the server stops taking requests. */
  readonly onClosing?: () => void
  /** Once, after the server has closed. */
  readonly onClosed?: () => void
  /**
   * Runs the whole request (`proceed`: every step's onRequest, the answer, and all they wait for)
   * in a context of the step's own: the request's trace span. At most one step has it.
   */
  readonly around?: (exchange: Exchange, proceed: () => void) => void
  readonly onRequest?: (exchange: Exchange) => Outcome | Promise<Outcome>
  readonly onAnswer?: (exchange: Exchange) => void
  readonly onDone?: (exchange: Exchange) => void
}

/** A moment of the server's lifecycle that steps take part in. */
export type LifecycleMoment = 'onReady' | 'onClosing' | 'onClosed'

export interface PipelineDeps {
  config: Readonly<Config>
  verifier: KeyVerifier
  /** Where refusals of expired keys and denied scopes are recorded. */
  audit: AuditTrail
  /** Counts each key's requests (the portal's usage chart). */
  usage: UsageRecorder
  /** Absent when RATE_LIMIT_PER_MINUTE is 0. */
  limiter: RateLimiter | undefined
  /** SANDBOX_RATE_LIMIT_PER_MINUTE: what test keys are counted against instead. */
  sandboxLimiter: RateLimiter
  /** Absent when METRICS_ENABLED is false. */
  metrics: Metrics | undefined
  /** The API's operations, by method and path. */
  routes: ApiRoutes
  /** The service's logger: the access log's lines, load shedding's warnings. */
  log: Logger
  /** The framework's request handler: it answers every request outside /v1. */
  framework: HandedOver
}

/**
 * Every per-request step of the service, in the order a request meets them. This list is the
 * whole pipeline: every request the server receives goes through it, the API's (under /v1) and
 * all others, which the handler step hands to the framework (the portal, the reference page, the
 * probes, the metrics). No configuration removes a step (an unconfigured protection, such as CORS
 * without CORS_ORIGINS, lets every request through), and nothing answers a request around it: a
 * faster answer is an optimisation inside a step (a cached page in the handler, a key verified
 * once in authentication). Adding a step is adding one line here (CONTRIBUTING.md).
 */
export function pipeline (deps: PipelineDeps): Step[] {
  const addressOf = clientAddressOf(deps.config.trustProxy)
  return [
    requestContext(),
    // The request's trace span, when tracing is on: every later step runs inside it.
    tracing(activeTracer() !== undefined, deps.routes, addressOf),
    // Counts each request in flight from its arrival; times and counts it once it is over.
    metricsStep(deps.metrics, deps.routes),
    drainRefusal(),
    loadShedding(deps.config.loadShedEventLoopDelayMs, deps.log, deps.metrics),
    cors(deps.config.corsOrigins),
    authentication(deps.verifier, deps.audit, addressOf),
    rateLimit(deps.limiter, deps.sandboxLimiter),
    // Before anything reads the body: how it is framed and typed.
    messageFraming(),
    routing(deps.routes),
    // Once routing has found the operation: the scope it needs.
    authorization(deps.audit, deps.routes, addressOf),
    validation(deps.routes),
    handler(deps.framework),
    commonHeaders(deps.routes),
    keyUsage(deps.usage, deps.routes),
    accessLog(deps.log)
  ]
}

/** Whether a request is the API's: its path is /v1 or under it. */
function isApiRequest (url: string): boolean {
  return url.startsWith('/v1') && (url.length === 3 || url.charCodeAt(3) === 0x2f /* / */ || url.charCodeAt(3) === 0x3f /* ? */)
}

/** The three phases of the steps that apply to one kind of request, as plain lists of functions. */
interface Phases {
  request: Array<NonNullable<Step['onRequest']>>
  answer: Array<NonNullable<Step['onAnswer']>>
  done: Array<NonNullable<Step['onDone']>>
}

function phasesOf (steps: readonly Step[], api: boolean): Phases {
  const own = steps.filter((step) => api || step.scope === 'every request')
  return {
    request: own.flatMap((step) => step.onRequest ?? []),
    answer: own.flatMap((step) => step.onAnswer ?? []),
    done: own.flatMap((step) => step.onDone ?? [])
  }
}

/** Runs one moment of the lifecycle of every step, in list order. */
export function runLifecycle (steps: readonly Step[], moment: LifecycleMoment): void {
  for (const step of steps) step[moment]?.()
}

/** The failure as the answer the client sees: an ApiError as it is, anything else logged and hidden. */
function failed (exchange: Exchange, error: unknown): Answer {
  return errorAnswer(error instanceof ApiError ? error : failureToApiError(error, exchange.log, exchange.id))
}

/**
 * Hands the request to the framework, which writes the answer itself: the steps' fields are set
 * first, and its own win where both set one. `done` runs once the answer is written or abandoned.
 */
function handOver (exchange: Exchange, outcome: HandedOver, done: () => void): void {
  const { request, response, fields } = exchange
  for (let index = 0; index < fields.length; index += 2) response.appendHeader(fields[index] as string, fields[index + 1] as string)
  // Whether the framework read the body (a portal form) before it answers is known when it writes: its onSend hook (app/server.ts).
  if (exchange.closesConnection) response.setHeader('connection', 'close')
  finished(response, (error) => {
    exchange.statusCode = response.statusCode
    // Closed before the answer was written whole: the client went away.
    exchange.abandoned = error !== undefined && error !== null
    done()
  })
  outcome.writtenBy(request, response)
}

/** Writes a step's answer with the steps' header fields. */
function write (exchange: Exchange, outcome: Answer): void {
  const { request, response, fields } = exchange
  exchange.statusCode = outcome.statusCode
  if (exchange.closesConnection || bodyLeftUnread(request)) fields.push('connection', 'close')
  const own = outcome.headers
  for (let index = 0; index < own.length; index++) fields.push(own[index] as string)
  response.writeHead(outcome.statusCode, fields)
  response.end(outcome.body)
}

/**
 * The server's request listener: runs every request through the steps. `log` is the service's
 * logger, which each request's own logger is bound from.
 */
export function requestListener (steps: readonly Step[], log: Logger): (request: IncomingMessage, response: ServerResponse) => void {
  const api = phasesOf(steps, true)
  const others = phasesOf(steps, false)
  const around = steps.find((step) => step.around !== undefined)?.around

  function proceed (exchange: Exchange, phases: Phases, from: number): void {
    for (let index = from; index < phases.request.length; index++) {
      let outcome: Outcome | Promise<Outcome>
      try {
        outcome = (phases.request[index] as NonNullable<Step['onRequest']>)(exchange)
      } catch (error) {
        outcome = failed(exchange, error)
      }
      if (outcome === undefined) continue
      if (outcome instanceof Promise) wait(exchange, phases, outcome, index + 1)
      else answer(exchange, phases, outcome)
      return
    }
    answer(exchange, phases, failed(exchange, new Error('no step answered the request')))
  }

  /**
   * A step waits: the request goes on when it is done. A client that has gone away meanwhile (its
   * connection is closed) gets no answer; its request is over then, and the steps' onDone say so.
   */
  function wait (exchange: Exchange, phases: Phases, outcome: Promise<Outcome>, next: number): void {
    outcome.then((settled) => {
      if (goneAway(exchange, phases)) return
      if (settled === undefined) proceed(exchange, phases, next)
      else answer(exchange, phases, settled)
    }, (error: unknown) => {
      if (!goneAway(exchange, phases)) answer(exchange, phases, failed(exchange, error))
    })
  }

  function goneAway (exchange: Exchange, phases: Phases): boolean {
    if (!exchange.request.socket.destroyed) return false
    exchange.abandoned = true
    finish(exchange, phases)
    return true
  }

  /**
   * Writes the answer. Whoever gives it, an answer written before the request's body was read whole
   * says Connection: close (the framework's, by its onSend hook), and Node closes the connection once
   * it is written instead of reading the rest of a body nobody reads. A request without a body costs
   * two header look-ups.
   */
  function answer (exchange: Exchange, phases: Phases, outcome: Answer | HandedOver): void {
    for (const addFields of phases.answer) addFields(exchange)
    if ('writtenBy' in outcome) {
      handOver(exchange, outcome, () => { finish(exchange, phases) })
      return
    }
    write(exchange, outcome)
    finish(exchange, phases)
  }

  function finish (exchange: Exchange, phases: Phases): void {
    for (const onDone of phases.done) {
      try {
        onDone(exchange)
      } catch (error) {
        log.error({ err: error, requestId: exchange.id }, 'a pipeline step failed after the answer')
      }
    }
  }

  return function handleRequest (request: IncomingMessage, response: ServerResponse): void {
    const startedAt = performance.now()
    const raw = request.url ?? '/'
    const isApi = isApiRequest(raw)
    // An escape the router cannot decode is itself escaped, so the request gets the route's own answer.
    const exchange = new Exchange(request, response, isApi ? tolerantUrl(raw) : raw, isApi, startedAt, log)
    const phases = isApi ? api : others
    if (around === undefined) proceed(exchange, phases, 0)
    else around(exchange, () => { proceed(exchange, phases, 0) })
  }
}
