import type { Step } from '../pipeline.js'

/**
 * Headers on every response, set as the request arrives so that every answer carries them,
 * refusals included: the request id (X-Request-Id) and nosniff. (A refusal sent before the
 * request's body was read also says Connection: close: see sendError.)
 */
export function commonHeaders (): Step {
  return {
    name: 'common headers',
    scope: 'every request',
    onRequest: function addCommonHeaders (request, reply, done) {
      reply.header('x-request-id', request.id)
      reply.header('x-content-type-options', 'nosniff')
      done()
    }
  }
}
