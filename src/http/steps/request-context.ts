import { randomUUID } from 'node:crypto'
import type { IncomingMessage } from 'node:http'
import { holdsKeyShape } from '../../core/api-keys.js'
import type { Step } from '../pipeline.js'

const REQUEST_ID = /^[A-Za-z0-9._:-]{1,128}$/

/**
 * The caller's X-Request-Id when it is a sane token, a new UUID otherwise. An id shaped like a key
 * is replaced too: the id is in every log line of the request, and logs hold no key.
 */
export function requestIdOf (request: Pick<IncomingMessage, 'headers'>): string {
  const given = request.headers['x-request-id']
  return typeof given === 'string' && REQUEST_ID.test(given) && !holdsKeyShape(given) ? given : randomUUID()
}

/**
 * Every request gets an id (echoed in X-Request-Id) and, when the caller sent a valid W3C
 * traceparent, its trace in every log line. A request handed to the framework keeps its id there
 * (Fastify's request.id), and its request.log is bound the same way (app/server.ts).
 */
export function requestContext (): Step {
  return {
    name: 'request id and trace context',
    scope: 'every request',
    onRequest: function identify (exchange) {
      exchange.id = requestIdOf(exchange.request)
      return undefined
    }
  }
}
