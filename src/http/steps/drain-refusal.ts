import { errors } from '../../core/errors.js'
import { errorAnswer } from '../exchange.js'
import type { Step } from '../pipeline.js'

const DRAINING = errors.draining()

/**
 * Requests that reach the server while it shuts down (on a connection that was not idle when it
 * began: one whose request header was still arriving) get 503 and Retry-After in the API's error
 * shape, before anything else. Shutting down starts as the server begins to close (onClosing).
 *
 * Every answer written once shutting down has begun, a refusal or the answer to a request that was
 * in flight, says `Connection: close`, and Node closes the connection once it is written. The
 * framework's close ends only the connections idle at that moment: without this, a keep-alive
 * connection whose request was in flight stayed open until its keep-alive timeout (72 s), longer
 * than the server waits before forcing its exit.
 */
export function drainRefusal (): Step {
  let closing = false
  return {
    name: 'shutdown refusal',
    scope: 'every request',
    onClosing: function startRefusing () {
      closing = true
    },
    onRequest: function refuseWhileClosing (exchange) {
      return closing ? errorAnswer(DRAINING) : undefined
    },
    onAnswer: function closeWhileClosing (exchange) {
      if (closing) exchange.closesConnection = true
    }
  }
}
