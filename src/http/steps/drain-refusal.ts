import { ApiError } from '../../core/errors.js'
import { sendError } from '../errors.js'
import type { Step } from '../pipeline.js'

/**
 * Requests that reach the server while it shuts down (on connections kept alive, or sent behind
 * one still being answered) get 503 and Retry-After in the API's error shape, before anything
 * else: Fastify's own answer for them (return503OnClosing) has a body of its own.
 */
export function drainRefusal (): Step {
  let closing = false
  return {
    name: 'shutdown refusal',
    scope: 'every request',
    setUp (app) {
      app.addHook('preClose', function startRefusing (done) {
        closing = true
        done()
      })
    },
    onRequest: function refuseWhileClosing (_request, reply, done) {
      if (!closing) {
        done()
        return
      }
      sendError(reply, new ApiError('service_unavailable', 'the service is shutting down; retry shortly', { 'retry-after': '1' }))
    }
  }
}
