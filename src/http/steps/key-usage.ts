import type { UsageRecorder } from '../../services/usage-recorder.js'
import type { Step } from '../pipeline.js'

/**
 * Counts each answered request of a valid key by operation (named by the authorization step) and
 * outcome (services/usage-recorder.ts): what the portal's usage chart and `keys usage` show. A
 * request that matched no operation counts as `other`.
 */
export function keyUsage (recorder: UsageRecorder): Step {
  return {
    name: 'key usage',
    scope: 'api',
    onResponse: function countKeyUse (request, reply, done) {
      const key = request.apiKey
      if (key !== null) {
        // A request refused before the operation was named (over the rate limit) still belongs to its route's operation.
        const operation = request.operation !== 'other' || request.is404 ? request.operation : (request.routeOptions.schema?.operationId ?? 'other')
        recorder.count(key.keyId, operation, reply.statusCode)
      }
      done()
    }
  }
}
