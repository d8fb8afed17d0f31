import type { FastifyReply, FastifyRequest } from 'fastify'
import { ApiError } from '../../core/errors.js'
import type { Admission, RateLimiter } from '../../services/rate-limiter.js'
import { sendError } from '../errors.js'
import type { Step } from '../pipeline.js'

function answer (limiter: RateLimiter, reply: FastifyReply, admission: Admission, done: (error?: Error) => void): void {
  // IETF httpapi ratelimit-headers draft: the policy, and what is left of it.
  reply.header('ratelimit-policy', limiter.policy)
  if (admission.admitted) {
    reply.header('ratelimit', `"per-key";r=${admission.remaining};t=${admission.resetSeconds}`)
    done()
    return
  }
  reply.header('ratelimit', `"per-key";r=0;t=${admission.resetSeconds}`)
  sendError(reply, new ApiError('rate_limited', `rate limit of ${limiter.limit} requests per minute exceeded; retry in ${admission.resetSeconds} seconds`,
    { 'retry-after': String(admission.resetSeconds) }))
}

/**
 * RATE_LIMIT_PER_MINUTE per API key (off when 0): after authentication, so only requests with a
 * valid key are counted, by key. Counted in memory and reconciled with the other instances
 * through Redis in the background (services/rate-limiter.ts): no request waits for Redis.
 */
export function rateLimit (limiter: RateLimiter | undefined): Step {
  return {
    name: 'rate limit',
    scope: 'api',
    onRequest: limiter === undefined
      ? undefined
      : function limitRate (request: FastifyRequest, reply: FastifyReply, done: (error?: Error) => void) {
        const key = request.apiKey
        if (key === null) {
          done()
          return
        }
        const admission = limiter.take(key.keyId)
        if (admission instanceof Promise) admission.then((late) => { answer(limiter, reply, late, done) }, done)
        else answer(limiter, reply, admission, done)
      }
  }
}
