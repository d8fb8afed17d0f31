import { errors } from '../../core/errors.js'
import type { ApiRoutes } from '../api-routes.js'
import { noRouteError } from '../errors.js'
import { emptyAnswer, errorAnswer } from '../exchange.js'
import type { Step } from '../pipeline.js'

/**
 * Finds the operation the request names (api-routes.ts) once it is authenticated: an unknown path
 * gets 404, a path segment longer than the router takes 400 naming the limit, a known path with
 * another method 405 with Allow, and OPTIONS 204 with Allow, before any body is read. HEAD is
 * answered as GET is, without the body.
 */
export function routing (routes: ApiRoutes): Step {
  return {
    name: 'routing',
    scope: 'api',
    onRequest: function route (exchange) {
      if (routes.hasOverlongSegment(exchange)) return errorAnswer(errors.segmentTooLong())
      const found = routes.routeOf(exchange)
      if (found === undefined) return errorAnswer(noRouteError(exchange.method, exchange.path, routes))
      const { resource, operation } = found
      if (operation === undefined) {
        if (exchange.method === 'OPTIONS') return emptyAnswer(204, ['allow', resource.allow])
        const path = resource.template.replace(/:(\w+)/g, '{$1}')
        return errorAnswer(errors.methodNotAllowed(exchange.method, path, resource.allow))
      }
      exchange.operation = operation
      exchange.params = found.params
      exchange.query = found.query
      return undefined
    }
  }
}
