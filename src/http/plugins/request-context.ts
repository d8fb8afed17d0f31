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

/**
 * What every request carries through the service: its id (echoed as X-Request-Id), the
 * caller's W3C trace in every log line, and one access-log line when it is answered.
 */
export function registerRequestContext (app: FastifyInstance): void {
  // Callback-style hooks: these run on every request, and an async hook costs a promise each.
  app.addHook('onRequest', function traceContext (request, _reply, done) {
    const traceparent = request.headers.traceparent
    const trace = typeof traceparent === 'string' ? parseTraceparent(traceparent) : undefined
    if (trace) request.log = request.log.child({ traceId: trace.traceId, spanId: trace.spanId, parentSpanId: trace.parentSpanId })
    done()
  })
  app.addHook('onSend', function addCommonHeaders (request, reply, payload, done) {
    reply.headers(commonHeaders(request.id))
    done(null, payload)
  })
  app.addHook('onResponse', function accessLog (request, reply, done) {
    request.log.info({ method: request.method, url: request.url, statusCode: reply.statusCode, ms: Math.round(reply.elapsedTime * 100) / 100 }, 'request completed')
    done()
  })
}
