import type { IncomingHttpHeaders } from 'node:http'
import type { Step } from '../pipeline.js'

/** Whether the request announced a body (a request without one is complete once its headers are). */
function hasBody (headers: IncomingHttpHeaders): boolean {
  const length = headers['content-length']
  return headers['transfer-encoding'] !== undefined || (length !== undefined && length !== '0')
}

/**
 * Headers on every response: the request id, nosniff, and Connection: close when the answer
 * comes before the request's body was read (an unauthenticated upload, an unknown path): the
 * connection is then closed once answered, so that the server never reads a body it refused.
 */
export function commonHeaders (): Step {
  return {
    name: 'common headers',
    scope: 'every request',
    onSend: function addCommonHeaders (request, reply, payload, done) {
      reply.header('x-request-id', request.id)
      reply.header('x-content-type-options', 'nosniff')
      if (!request.raw.complete && hasBody(request.headers)) reply.header('connection', 'close')
      done(null, payload)
    }
  }
}
