import { monitorEventLoopDelay } from 'node:perf_hooks'
import type { Logger } from 'pino'
import type { Metrics } from '../../services/metrics.js'
import { errors } from '../../core/errors.js'
import { errorAnswer } from '../exchange.js'
import type { Step } from '../pipeline.js'

/** Right after start-up, compiling schemas and warming the JIT stalls the loop once; that is no overload. */
const WARM_UP_MS = 2000
/** While requests are shed, one warning at most this often says how many and why. */
const SHED_WARNING_INTERVAL_MS = 1000
/** The histogram's own resolution, taken off its mean as the delay a loop with no lag shows. */
const RESOLUTION_MS = 10

const OVERLOADED = errors.overloaded()

/**
 * Whether a request is shed for this event-loop delay: only for one measured above the limit. A
 * sample interval in which the histogram got no sample (the loop stalled through all of it) reads
 * as Infinity, which says that the loop stalled, not that it stalled past the limit: a test saw it
 * after a 300 ms stall, which the default limit of 1000 ms must let pass.
 */
export function shedsFor (eventLoopDelayMs: number | undefined, limitMs: number): boolean {
  return eventLoopDelayMs !== undefined && Number.isFinite(eventLoopDelayMs) && eventLoopDelayMs > limitMs
}

/**
 * Sheds load with 503 and Retry-After while the event loop lags past LOAD_SHED_EVENT_LOOP_DELAY_MS
 * (0 sheds nothing), so latency stays bounded instead of every request queueing behind the
 * backlog. The delay is Node's own event-loop delay histogram (perf_hooks, as
 * @fastify/under-pressure reads it), averaged over each sample interval; a request reads one flag.
 * Shedding is logged as a warning, at most once a second, with the loop's delay and the requests
 * shed since the last one, and each shed request is counted in the metrics.
 */
export function loadShedding (maxEventLoopDelayMs: number, log: Logger, metrics?: Metrics): Step {
  if (maxEventLoopDelayMs === 0) return { name: 'load shedding', scope: 'every request' }
  const sampleIntervalMs = Math.max(RESOLUTION_MS, Math.min(100, maxEventLoopDelayMs))
  let shedding = false
  let eventLoopDelayMs = 0
  let shedSinceWarning = 0
  let lastWarningAt = -Infinity
  const histogram = monitorEventLoopDelay({ resolution: RESOLUTION_MS })
  let readyAt = Infinity
  let timer: NodeJS.Timeout | undefined
  return {
    name: 'load shedding',
    scope: 'every request',
    onReady: function startSampling () {
      readyAt = Date.now()
      histogram.enable()
      timer = setInterval(function sample () {
        const mean = histogram.mean / 1e6 - RESOLUTION_MS
        eventLoopDelayMs = Number.isNaN(mean) ? Infinity : Math.max(0, mean)
        histogram.reset()
        shedding = Date.now() - readyAt >= WARM_UP_MS && shedsFor(eventLoopDelayMs, maxEventLoopDelayMs)
      }, sampleIntervalMs).unref()
    },
    onClosed: function stopSampling () {
      clearInterval(timer)
      histogram.disable()
    },
    onRequest: function shedWhileLagging (exchange) {
      if (!shedding) return undefined
      shedSinceWarning++
      if (metrics !== undefined) metrics.shedRequests++
      const now = Date.now()
      if (now - lastWarningAt >= SHED_WARNING_INTERVAL_MS) {
        lastWarningAt = now
        log.warn({ eventLoopDelayMs, limitMs: maxEventLoopDelayMs, shed: shedSinceWarning }, 'the event loop lags: shedding requests with 503')
        shedSinceWarning = 0
      }
      return errorAnswer(OVERLOADED)
    }
  }
}
