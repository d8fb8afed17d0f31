import { errors } from '../../core/errors.js'
import type { Admission, RateLimiter } from '../../services/rate-limiter.js'
import { errorAnswer, type Answer, type Exchange } from '../exchange.js'
import type { Step } from '../pipeline.js'

/** IETF httpapi ratelimit-headers draft: the policy, and what is left of it. */
function admit (limiter: RateLimiter, exchange: Exchange, admission: Admission): Answer | undefined {
  exchange.header('ratelimit-policy', limiter.policy)
  if (admission.admitted) {
    exchange.header('ratelimit', `"per-key";r=${admission.remaining};t=${admission.resetSeconds}`)
    return undefined
  }
  exchange.header('ratelimit', `"per-key";r=0;t=${admission.resetSeconds}`)
  return errorAnswer(errors.rateLimited(limiter.limit, admission.resetSeconds))
}

/**
 * RATE_LIMIT_PER_MINUTE per live API key (off when 0), SANDBOX_RATE_LIMIT_PER_MINUTE per test key: after authentication, so only requests with a
 * valid key are counted, by key. Counted in memory and reconciled with the other instances
 * through Redis in the background (services/rate-limiter.ts): no request waits for Redis, but
 * one that would put this instance too far ahead of the shared count.
 */
export function rateLimit (live: RateLimiter | undefined, sandbox: RateLimiter): Step {
  return {
    name: 'rate limit',
    scope: 'api',
    onRequest: function limitRate (exchange) {
      const key = exchange.key
      if (key === null) return undefined
      const limiter = key.test ? sandbox : live
      if (limiter === undefined) return undefined
      const admission = limiter.take(key.keyId)
      if (admission instanceof Promise) return admission.then((late) => admit(limiter, exchange, late))
      return admit(limiter, exchange, admission)
    }
  }
}
