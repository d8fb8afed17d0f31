import type { UsageRecorder } from '../../services/usage-recorder.js'
import type { ApiRoutes } from '../api-routes.js'
import type { Step } from '../pipeline.js'

/**
 * Counts each answered request of a valid key by operation and outcome
 * (services/usage-recorder.ts): what the portal's usage chart and `keys usage` show. A request
 * refused before it was routed (over the rate limit) counts under the operation its method and
 * path name; one that names none counts as `other`.
 */
export function keyUsage (recorder: UsageRecorder, routes: ApiRoutes): Step {
  return {
    name: 'key usage',
    scope: 'api',
    onDone: function countKeyUse (exchange) {
      const key = exchange.key
      if (key === null || exchange.abandoned) return
      recorder.count(key.keyId, routes.routeOf(exchange)?.operation?.operationId ?? 'other', exchange.statusCode)
    }
  }
}
