import { randomUUID } from 'node:crypto'
import type { FastifyInstance, FastifyRequest } from 'fastify'
import { parseTraceparent } from '../../core/trace-context.js'

const REQUEST_ID = /^[A-Za-z0-9._:-]{1,128}$/

/** The caller's X-Request-Id when it is a sane token, a new UUID otherwise. */
export function requestIdOf (request: { headers: FastifyRequest['headers'] }): string {
  const given = request.headers['x-request-id']
  return typeof given === 'string' && REQUEST_ID.test(given) ? given : randomUUID()
}

/** Headers on every response, hooks or not. */
export function commonHeaders (requestId: string): Record<string, string> {
  return { 'x-request-id': requestId, 'x-content-type-options': 'nosniff' }
}

/** The same headers as a flat list, for `writeHead`. */
export function commonHeaderList (requestId: string): string[] {
  return ['x-request-id', requestId, 'x-content-type-options', 'nosniff']
}

/** The fields every log line of a request carries when the caller sent a valid W3C traceparent. */
export function traceBindings (traceparent: string | string[] | undefined): Record<string, string> | undefined {
  const trace = typeof traceparent === 'string' ? parseTraceparent(traceparent) : undefined
  return trace && { traceId: trace.traceId, spanId: trace.spanId, parentSpanId: trace.parentSpanId }
}

/** The access-log line's own fields (the request id and trace come with the logger's bindings). */
export function accessLogFields (method: string, url: string, statusCode: number, elapsedMs: number): Record<string, string | number> {
  return { method, url, statusCode, ms: Math.round(elapsedMs * 100) / 100 }
}

/**
 * What every request carries through the service: its id (echoed as X-Request-Id), the
 * caller's W3C trace in every log line, and one access-log line when it is answered.
 */
export function registerRequestContext (app: FastifyInstance): void {
  // Callback-style hooks: these run on every request, and an async hook costs a promise each.
  app.addHook('onRequest', function traceContext (request, _reply, done) {
    const trace = traceBindings(request.headers.traceparent)
    if (trace) request.log = request.log.child(trace)
    done()
  })
  app.addHook('onSend', function addCommonHeaders (request, reply, payload, done) {
    reply.headers(commonHeaders(request.id))
    done(null, payload)
  })
  app.addHook('onResponse', function accessLog (request, reply, done) {
    request.log.info(accessLogFields(request.method, request.url, reply.statusCode, reply.elapsedTime), 'request completed')
    done()
  })
}
