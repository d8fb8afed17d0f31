import { Counter, Gauge, Registry, collectDefaultMetrics } from 'prom-client'
import type { Store } from '../storage/store.js'
import { LabelledDurations } from './labelled-durations.js'
import { registerReplicationMetrics } from './replication-metrics.js'

/** A counter kept in a plain number by its owner and read from it at each scrape. */
function counterReadWhenScraped (registry: Registry, name: string, help: string, read: () => number): Counter {
  const counter: Counter = new Counter({
    name,
    help,
    registers: [registry],
    collect: () => {
      counter.reset()
      counter.inc(read())
    }
  })
  return counter
}

/**
 * The service's Prometheus metrics, one registry per app (so tests and several apps in one
 * process never share counters). What is counted on every request is kept in plain numbers
 * and read by prom-client when scraped.
 */
export class Metrics {
  readonly registry = new Registry()

  /** Requests by method, route template, status and mode (a test key's, or live): a count and a latency histogram. */
  readonly requests = new LabelledDurations(['method', 'route', 'status', 'mode'], [0.0005, 0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5])

  /** Requests being served right now: a plain number on the hot path, read when scraped. */
  inFlightRequests = 0

  readonly inFlight = new Gauge({
    name: 'http_requests_in_flight',
    help: 'Requests being served right now.',
    registers: [this.registry],
    collect: () => { this.inFlight.set(this.inFlightRequests) }
  })

  /** Time spent in storage calls, by operation (a batched write counts once per request). */
  readonly databaseDuration = new LabelledDurations(['operation'], [0.0001, 0.00025, 0.0005, 0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 1])

  /** Whether rate limits are counted together with the other instances (through Redis); unset without rate limiting. */
  rateLimitShared: (() => boolean) | undefined

  readonly rateLimitSharedGauge = new Gauge({
    name: 'rate_limit_shared',
    help: 'Whether rate limits are counted together with the other instances through Redis (1), or by this instance alone because Redis does not answer (0). Absent without rate limiting.',
    registers: [this.registry],
    collect: () => {
      const shared = this.rateLimitShared
      if (shared === undefined) this.rateLimitSharedGauge.reset()
      else this.rateLimitSharedGauge.set(shared() ? 1 : 0)
    }
  })

  /** Requests shed with 503 while the event loop lagged (http/steps/load-shedding.ts). */
  shedRequests = 0

  readonly shedRequestsTotal = new Counter({
    name: 'http_requests_shed_total',
    help: 'Requests shed with 503 because the event loop lagged past LOAD_SHED_EVENT_LOOP_DELAY_MS; http_requests_total counts them too, as 503.',
    registers: [this.registry],
    collect: () => {
      this.shedRequestsTotal.reset()
      this.shedRequestsTotal.inc(this.shedRequests)
    }
  })

  /** Verifications of well-formed API keys answered by the verified-key cache, and by the database. */
  keyCacheHits = 0
  keyCacheMisses = 0

  readonly keyCacheLookups = new Counter({
    name: 'api_key_cache_lookups_total',
    help: 'API key verifications, by whether the verified-key cache answered (hit) or the database had to (miss).',
    labelNames: ['result'] as const,
    registers: [this.registry],
    collect: () => {
      this.keyCacheLookups.reset()
      this.keyCacheLookups.inc({ result: 'hit' }, this.keyCacheHits)
      this.keyCacheLookups.inc({ result: 'miss' }, this.keyCacheMisses)
    }
  })

  /** Requests refused before any route as not valid HTTP/1.1 (CONNECT too), by the status they were answered. */
  private readonly parserRefusals = new Map<number, number>()

  readonly parserRefusalsTotal = new Counter({
    name: 'http_parser_refusals_total',
    help: 'Requests refused before any route because they are not valid HTTP/1.1 (CONNECT too), by the status answered; http_requests_total does not count them.',
    labelNames: ['status'] as const,
    registers: [this.registry],
    collect: () => {
      this.parserRefusalsTotal.reset()
      for (const [status, count] of this.parserRefusals) this.parserRefusalsTotal.inc({ status: String(status) }, count)
    }
  })

  readonly databasePool: Gauge<'state'> | undefined

  constructor ({ poolStats, groupCommitStats, replicationStats, mailOutbox }: Partial<Pick<Store, 'poolStats' | 'groupCommitStats' | 'replicationStats' | 'mailOutbox'>> = {}) {
    this.requests.registerIn(this.registry,
      { name: 'http_request_duration_seconds', help: 'Time from request received to response sent, by method, route template, status code and mode (test for a test key\'s, live otherwise).' },
      { name: 'http_requests_total', help: 'HTTP requests answered, by method, route template, status code and mode (test for a test key\'s, live otherwise).' })
    this.databaseDuration.registerIn(this.registry,
      { name: 'db_query_duration_seconds', help: 'Time spent in storage calls, by operation (a batched write counts once per request).' })
    collectDefaultMetrics({ register: this.registry })
    if (groupCommitStats) {
      counterReadWhenScraped(this.registry, 'db_pet_commits_total',
        'Transactions that committed created animals: creates divided by commits is the animals per group commit.', () => groupCommitStats().commits)
      const syncs = groupCommitStats().syncs
      if (syncs !== undefined) {
        counterReadWhenScraped(this.registry, 'db_wal_syncs_total',
          'Syncs of the SQLite write-ahead log that acknowledge created animals; each covers every commit before it.', () => groupCommitStats().syncs ?? 0)
      }
    }
    this.databasePool = poolStats && new Gauge({
      name: 'db_pool_connections',
      help: 'Database pool connections, by state: total, idle, and requests waiting for one.',
      labelNames: ['state'] as const,
      registers: [this.registry],
      collect () {
        const stats = poolStats()
        this.set({ state: 'total' }, stats.total)
        this.set({ state: 'idle' }, stats.idle)
        this.set({ state: 'waiting' }, stats.waiting)
      }
    })
    if (replicationStats) registerReplicationMetrics(this.registry, replicationStats)
    if (mailOutbox) {
      // Read from the shared outbox when scraped: every instance reports the same backlog.
      const pending = new Gauge({
        name: 'mail_outbox_pending',
        help: 'Messages in the mail outbox waiting to be sent (the same on every instance: the outbox is shared).',
        registers: [this.registry],
        collect: async () => { pending.set(await mailOutbox.pendingCount()) }
      })
    }
  }

  refusedByParser (status: number): void {
    this.parserRefusals.set(status, (this.parserRefusals.get(status) ?? 0) + 1)
  }
}
