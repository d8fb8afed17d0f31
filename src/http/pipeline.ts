import type { FastifyInstance, FastifyRequest, onRequestAbortHookHandler, onRequestHookHandler, onResponseHookHandler, onSendHookHandler, preParsingHookHandler } from 'fastify'
import type { Config } from '../config.js'
import type { AuditTrail } from '../services/audit-trail.js'
import type { KeyVerifier } from '../services/key-verifier.js'
import type { Metrics } from '../services/metrics.js'
import type { RateLimiter } from '../services/rate-limiter.js'
import type { UsageRecorder } from '../services/usage-recorder.js'
import { accessLog } from './steps/access-log.js'
import { authentication } from './steps/authentication.js'
import { authorization } from './steps/authorization.js'
import { commonHeaders } from './steps/common-headers.js'
import { cors } from './steps/cors.js'
import { drainRefusal } from './steps/drain-refusal.js'
import { keyUsage } from './steps/key-usage.js'
import { loadShedding } from './steps/load-shedding.js'
import { metricsStep } from './steps/metrics.js'
import { rateLimit } from './steps/rate-limit.js'
import { requestContext } from './steps/request-context.js'
import { routing } from './steps/routing.js'

/**
 * One step of the request pipeline: what it does once at start-up, and its hooks in Fastify's
 * request lifecycle (onRequest, preParsing, then the route's validation and handler, onSend,
 * onResponse). Hooks are callback-style functions: one that answers sends the reply and does
 * not call `done`. Routes registered after the hooks still get them: Fastify gives every route the
 * application's hooks when it starts.
 */
export interface Step {
  readonly name: string
  /** `every request`: the API, the portal, the reference page and the probes alike; `api`: the API's requests (under /v1) only. */
  readonly scope: 'every request' | 'api'
  /** Runs once, in list order, before any request: plugins, decorators, routes. */
  readonly setUp?: (app: FastifyInstance) => Promise<void> | void
  readonly onRequest?: onRequestHookHandler
  readonly preParsing?: preParsingHookHandler
  readonly onSend?: onSendHookHandler
  readonly onResponse?: onResponseHookHandler
  /** The client went away before its request ended (onResponse does not run then). */
  readonly onRequestAbort?: onRequestAbortHookHandler
}

export interface PipelineDeps {
  config: Readonly<Config>
  verifier: KeyVerifier
  /** Where refusals of expired keys and denied scopes are recorded. */
  audit: AuditTrail
  /** Counts each key's requests (the portal's usage chart). */
  usage: UsageRecorder
  /** Absent when RATE_LIMIT_PER_MINUTE is 0. */
  limiter: RateLimiter | undefined
  /** Absent when METRICS_ENABLED is false. */
  metrics: Metrics | undefined
  /** Registers the API's routes (paths relative to /v1). */
  routes: (api: FastifyInstance) => Promise<void>
}

/**
 * Every per-request step of the service, in the order a request meets them. This list is the
 * whole pipeline: the routes add nothing to it but their own validation and handler, and no
 * configuration removes a step (an unconfigured protection, such as CORS without CORS_ORIGINS,
 * lets every request through). A faster answer is an optimisation inside a step (a cached page
 * in the handler, a key verified once in authentication), never a way around one. Adding a step
 * is adding one line here (CONTRIBUTING.md).
 */
export function pipeline (deps: PipelineDeps): Step[] {
  return [
    requestContext(),
    commonHeaders(),
    // Times and counts each request from its arrival (in flight) to its answer (recorded then).
    metricsStep(deps.metrics),
    drainRefusal(),
    loadShedding(deps.config.loadShedEventLoopDelayMs),
    cors(deps.config.corsOrigins),
    authentication(deps.verifier, deps.audit),
    rateLimit(deps.limiter),
    routing(),
    // Once routing has found the operation: the scope it needs.
    authorization(deps.audit),
    { name: 'handler', scope: 'api', setUp: async (app) => { await app.register(deps.routes, { prefix: '/v1' }) } },
    keyUsage(deps.usage),
    accessLog()
  ]
}

/** Whether a request is the API's: its path is /v1 or under it. */
export function isApiRequest (url: string): boolean {
  return url.startsWith('/v1') && (url.length === 3 || url.charCodeAt(3) === 0x2f /* / */ || url.charCodeAt(3) === 0x3f /* ? */)
}

type Done = (error?: Error | null, payload?: unknown) => void
type Hook = (request: FastifyRequest, ...rest: any[]) => void

/**
 * An api step's hook, run for the API's requests only; every other request goes straight on. One
 * wrapper per arity of Fastify's hooks, without rest parameters: a wrapper runs on every request,
 * and gathering and spreading its arguments cost an array each time.
 */
function forApiRequests<H extends Hook> (hook: H, arity: 2 | 3 | 4): H {
  const apiOnly = arity === 2
    ? function (this: unknown, request: FastifyRequest, done: Done): void {
      if (isApiRequest(request.url)) hook.call(this, request, done)
      else done(null)
    }
    : arity === 3
      ? function (this: unknown, request: FastifyRequest, reply: unknown, done: Done): void {
        if (isApiRequest(request.url)) hook.call(this, request, reply, done)
        else done(null)
      }
      // onSend and preParsing pass their payload on.
      : function (this: unknown, request: FastifyRequest, reply: unknown, payload: unknown, done: Done): void {
        if (isApiRequest(request.url)) hook.call(this, request, reply, payload, done)
        else done(null, payload)
      }
  Object.defineProperty(apiOnly, 'name', { value: hook.name })
  return apiOnly as unknown as H
}

/**
 * Installs the steps on the application, in list order: their set-up first, then their hooks, so
 * that Fastify runs the hooks of each lifecycle phase in the order of the list.
 */
export async function installPipeline (app: FastifyInstance, steps: readonly Step[]): Promise<void> {
  for (const step of steps) {
    await step.setUp?.(app)
    const own = <H extends Hook> (hook: H, arity: 2 | 3 | 4): H => (step.scope === 'api' ? forApiRequests(hook, arity) : hook)
    if (step.onRequest !== undefined) app.addHook('onRequest', own(step.onRequest, 3))
    if (step.preParsing !== undefined) app.addHook('preParsing', own(step.preParsing, 4))
    if (step.onSend !== undefined) app.addHook('onSend', own(step.onSend, 4))
    if (step.onResponse !== undefined) app.addHook('onResponse', own(step.onResponse, 3))
    if (step.onRequestAbort !== undefined) app.addHook('onRequestAbort', own(step.onRequestAbort, 2))
  }
}
