import { handedOver, type HandedOver } from '../exchange.js'
import type { Operation } from '../operation.js'
import type { Step } from '../pipeline.js'

/**
 * The answer: the operation's own handler for the API's requests, and for every other request
 * the framework (Fastify), whose routes are the portal, the reference page, the probes and the
 * metrics. The framework writes its answer itself; the steps' header fields are on the response
 * before it does, and the steps after the answer run once it is written.
 */
export function handler (framework: HandedOver): Step {
  return {
    name: 'handler',
    scope: 'every request',
    onRequest: function answer (exchange) {
      if (exchange.isApi) return (exchange.operation as Operation).handle(exchange)
      handedOver.set(exchange.request, exchange)
      return framework
    }
  }
}
