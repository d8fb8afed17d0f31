import type { ApiRoutes } from '../api-routes.js'
import type { Step } from '../pipeline.js'

/**
 * Header fields on every answer, refusals included: the request id (X-Request-Id) and nosniff; on
 * an operation's path, the fields of every answer there (getPet's Deprecation, Sunset and
 * successor Link), whether the operation answered or a step refused it first. (An answer sent
 * before the request's body was read whole also says Connection: close: see the pipeline's answer.)
 */
export function commonHeaders (routes: ApiRoutes): Step {
  return {
    name: 'common headers',
    scope: 'every request',
    onAnswer: function addCommonHeaders (exchange) {
      exchange.fields.push('x-request-id', exchange.id, 'x-content-type-options', 'nosniff')
      if (!exchange.isApi) return
      const own = routes.routeOf(exchange)?.operation?.fields
      if (own !== undefined) for (const field of own) exchange.fields.push(field)
    }
  }
}
