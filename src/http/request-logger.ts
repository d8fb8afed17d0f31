import type { Span } from '@opentelemetry/api'
import type { FastifyBaseLogger } from 'fastify'
import type { Bindings, ChildLoggerOptions, Logger } from 'pino'
import { parseTraceparent } from '../core/trace-context.js'

/** The request's W3C trace and its own span in it, and the caller's span when it sent one, as log fields. */
export interface TraceFields { traceId: string, spanId: string, parentSpanId?: string }

type Level = 'fatal' | 'error' | 'warn' | 'info' | 'debug' | 'trace'
type LogMethod = (...args: unknown[]) => void

/**
 * A request's logger (`exchange.log`, and `request.log` in the framework): bound to the request id
 * (and the caller's trace) like a child logger, but the child is made only when a line is written.
 * Most requests write nothing but their access-log line, which the access-log step writes on the
 * service's logger: a child logger per request was an object and its bindings for every one of them.
 */
export class RequestLogger {
  private bound: FastifyBaseLogger | undefined
  private fields: TraceFields | null | undefined

  constructor (
    private readonly root: Logger,
    readonly requestId: string,
    private readonly traceparent: string | undefined,
    /** The request's trace span, when tracing kept the request: its ids are the ones exported. */
    private readonly span?: Span
  ) {}

  /**
   * The trace fields: the request's span's when tracing kept the request, else those of a valid
   * traceparent, with this request's span id drawn once; undefined when neither is there.
   */
  traceContext (): TraceFields | undefined {
    if (this.fields === undefined) {
      const trace = this.traceparent === undefined ? undefined : parseTraceparent(this.traceparent)
      const own = this.span?.spanContext()
      this.fields = own !== undefined
        ? { traceId: own.traceId, spanId: own.spanId, ...(trace !== undefined && trace.traceId === own.traceId && { parentSpanId: trace.parentSpanId }) }
        : trace === undefined ? null : { traceId: trace.traceId, spanId: trace.spanId, parentSpanId: trace.parentSpanId }
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
