import type { IncomingMessage, ServerResponse } from 'node:http'
import { performance } from 'node:perf_hooks'
import type { FastifyBaseLogger } from 'fastify'
import type { Metrics } from '../services/metrics.js'
import { accessLogFields, traceBindings } from './plugins/request-context.js'

export type RequestHandler = (request: IncomingMessage, response: ServerResponse) => void

/** Levels at which the access log (info) is written. */
const LOGS_REQUESTS: ReadonlySet<string> = new Set(['trace', 'debug', 'info'])

/**
 * What the paths that answer in front of the framework (hot reads, hot creates) share:
 * whether they may answer at all, and the bookkeeping the framework's hooks would do.
 */
export class FrontGate {
  /** Set once the app is ready (never while a per-request protection is configured); cleared when it starts closing. */
  open = false
  log: FastifyBaseLogger | undefined
  isUnderPressure: () => boolean = () => false

  /** `metrics` is absent when METRICS_ENABLED=false. */
  constructor (readonly metrics: Metrics | undefined) {}

  /** Counts an answer in the request metrics and writes its access-log line, as the framework's hooks do. */
  answered (request: IncomingMessage, route: string, statusCode: number, requestId: string, startedMs: number): void {
    const elapsedMs = performance.now() - startedMs
    const method = request.method ?? ''
    this.metrics?.requests.record(method, route, statusCode, elapsedMs / 1000)
    if (this.log !== undefined && LOGS_REQUESTS.has(this.log.level)) {
      this.log.info({ requestId, ...traceBindings(request.headers.traceparent), ...accessLogFields(method, request.url ?? '', statusCode, elapsedMs) }, 'request completed')
    }
  }
}
