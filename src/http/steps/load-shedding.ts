import underPressure from '@fastify/under-pressure'
import { ApiError } from '../../core/errors.js'
import { sendError } from '../errors.js'
import type { Step } from '../pipeline.js'

/** Right after start-up, compiling schemas and warming the JIT stalls the loop once; that is no overload. */
const WARM_UP_MS = 2000
/** While requests are shed, one warning at most this often says how many and why. */
const SHED_WARNING_INTERVAL_MS = 1000

/**
 * Whether a request is shed for this event-loop delay: only for one measured above the limit.
 * @fastify/under-pressure reports Infinity when its delay histogram got no sample in the last
 * interval (100 ms at most), which says that the loop stalled, not that it stalled past the
 * limit: a test saw it after a 300 ms stall, which the default limit of 1000 ms must let pass.
 */
export function shedsFor (eventLoopDelayMs: number | undefined, limitMs: number): boolean {
  return eventLoopDelayMs !== undefined && Number.isFinite(eventLoopDelayMs) && eventLoopDelayMs > limitMs
}

/**
 * Sheds load with 503 and Retry-After while the event loop lags past LOAD_SHED_EVENT_LOOP_DELAY_MS
 * (0 sheds nothing), so latency stays bounded instead of every request queueing behind the
 * backlog. Shedding is logged as a warning, at most once a second, with the loop's delay and the
 * requests shed since the last one. The check is @fastify/under-pressure's own onRequest hook.
 */
export function loadShedding (maxEventLoopDelayMs: number): Step {
  return {
    name: 'load shedding',
    scope: 'every request',
    async setUp (app) {
      if (maxEventLoopDelayMs === 0) return
      let readyAt = Infinity
      let shedSinceWarning = 0
      let lastWarningAt = -Infinity
      app.addHook('onReady', async () => { readyAt = Date.now() })
      await app.register(underPressure, {
        maxEventLoopDelay: maxEventLoopDelayMs,
        sampleInterval: Math.min(100, maxEventLoopDelayMs),
        // Returning without sending lets the request through; once a reply is sent, Fastify runs no further hook.
        pressureHandler: (_request, reply, _type, eventLoopDelayMs) => {
          const now = Date.now()
          if (now - readyAt < WARM_UP_MS || !shedsFor(eventLoopDelayMs, maxEventLoopDelayMs)) return
          shedSinceWarning++
          if (now - lastWarningAt >= SHED_WARNING_INTERVAL_MS) {
            app.log.warn({ eventLoopDelayMs, limitMs: maxEventLoopDelayMs, shed: shedSinceWarning }, 'the event loop lags: shedding requests with 503')
            lastWarningAt = now
            shedSinceWarning = 0
          }
          sendError(reply, new ApiError('service_unavailable', 'the service is overloaded; retry shortly', { 'retry-after': '1' }))
        }
      })
    }
  }
}
