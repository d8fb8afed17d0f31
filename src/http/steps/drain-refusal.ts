import { ApiError } from '../../core/errors.js'
import { errorAnswer } from '../exchange.js'
import type { Step } from '../pipeline.js'

const DRAINING = new ApiError('service_unavailable', 'the service is shutting down; retry shortly', { 'retry-after': '1' })

/**
 * Requests that reach the server while it shuts down (on connections kept alive, or sent behind
 * one still being answered) get 503 and Retry-After in the API's error shape, before anything
 * else. Shutting down starts with the framework's close (its preClose hook).
 */
export function drainRefusal (): Step {
  let closing = false
  return {
    name: 'shutdown refusal',
    scope: 'every request',
    setUp (framework) {
      framework.addHook('preClose', function startRefusing (done) {
        closing = true
        done()
      })
    },
    onRequest: function refuseWhileClosing (exchange) {
      return closing ? errorAnswer(exchange, DRAINING) : undefined
    }
  }
}
