import { randomUUID } from 'node:crypto'
import type { IncomingMessage } from 'node:http'
import type { FastifyBaseLogger, FastifyRequest } from 'fastify'
import type { Bindings, ChildLoggerOptions, Logger } from 'pino'
import { parseTraceparent } from '../../core/trace-context.js'
import type { Step } from '../pipeline.js'

const REQUEST_ID = /^[A-Za-z0-9._:-]{1,128}$/

/** The caller's X-Request-Id when it is a sane token, a new UUID otherwise. */
export function requestIdOf (request: Pick<IncomingMessage, 'headers'>): string {
  const given = request.headers['x-request-id']
  return typeof given === 'string' && REQUEST_ID.test(given) ? given : randomUUID()
}

/** The caller's W3C trace, and this request's own span in it, as log fields. */
export interface TraceFields { traceId: string, spanId: string, parentSpanId: string }

type Level = 'fatal' | 'error' | 'warn' | 'info' | 'debug' | 'trace'
type LogMethod = (...args: unknown[]) => void

/**
 * `request.log`: bound to the request id (and the caller's trace) like the child logger Fastify
 * would make, but made only when a line is written. Most requests write nothing but their
 * access-log line, which the access-log step writes on the application's logger: a child logger
 * per request was an object and its bindings for every one of them.
 */
export class RequestLogger {
  private bound: FastifyBaseLogger | undefined
  private fields: TraceFields | null | undefined

  constructor (private readonly root: Logger, readonly requestId: string, private readonly traceparent: string | undefined) {}

  /** The trace fields, or undefined without a valid traceparent; this request's span id is drawn once. */
  traceContext (): TraceFields | undefined {
    if (this.fields === undefined) {
      const trace = this.traceparent === undefined ? undefined : parseTraceparent(this.traceparent)
      this.fields = trace === undefined ? null : { traceId: trace.traceId, spanId: trace.spanId, parentSpanId: trace.parentSpanId }
    }
    return this.fields ?? undefined
  }

  get level (): string { return this.root.level }
  set level (level: string) { this.bind().level = level }

  private bind (): FastifyBaseLogger {
    this.bound ??= this.root.child({ requestId: this.requestId, ...this.traceContext() })
    return this.bound
  }

  private write (level: Level, args: unknown[]): void {
    if (this.root.isLevelEnabled(level)) (this.bind()[level] as LogMethod)(...args)
  }

  fatal (...args: unknown[]): void { this.write('fatal', args) }
  error (...args: unknown[]): void { this.write('error', args) }
  warn (...args: unknown[]): void { this.write('warn', args) }
  info (...args: unknown[]): void { this.write('info', args) }
  debug (...args: unknown[]): void { this.write('debug', args) }
  trace (...args: unknown[]): void { this.write('trace', args) }
  silent (): void {}

  child (bindings: Bindings, options?: ChildLoggerOptions): FastifyBaseLogger {
    return this.bind().child(bindings, options)
  }
}

export function requestLoggerOf (request: FastifyRequest): RequestLogger {
  return request.log as unknown as RequestLogger
}

/** Every request gets an id (echoed in X-Request-Id) and, when the caller sent a valid W3C traceparent, its trace in every log line. */
export function requestContext (): Step {
  return {
    name: 'request id and trace context',
    scope: 'every request',
    setUp (app) {
      app.setGenReqId(requestIdOf)
      app.setChildLoggerFactory(function requestLogger (logger, bindings, _options, raw) {
        const traceparent = (raw as IncomingMessage).headers.traceparent
        return new RequestLogger(logger as Logger, String(bindings.requestId), typeof traceparent === 'string' ? traceparent : undefined) as unknown as FastifyBaseLogger
      })
    }
  }
}
