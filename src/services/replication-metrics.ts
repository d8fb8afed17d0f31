import { Counter, Gauge, type Registry } from 'prom-client'
import type { ReplicationStats } from '../storage/store.js'

/**
 * Gauges of a PostgreSQL service with several hosts or read replicas, read from the store when
 * scraped: which host is the primary, how far each replica lags and whether it is read from, and
 * where catalogue reads were answered.
 */
export function registerReplicationMetrics (registry: Registry, stats: () => ReplicationStats): void {
  const primary = new Gauge({
    name: 'db_primary',
    help: 'The PostgreSQL host that takes writes: 1 on the series of its host and timeline; no series while no host takes writes.',
    labelNames: ['host', 'timeline'] as const,
    registers: [registry],
    collect () {
      primary.reset()
      const { primary: host, timeline } = stats()
      if (host !== undefined) primary.set({ host, timeline: String(timeline ?? '') }, 1)
    }
  })
  const lag = new Gauge({
    name: 'db_replica_lag_seconds',
    help: 'How far each read replica is at most behind the primary (to the precision of its probes, 0.25 s); no series while unknown.',
    labelNames: ['host'] as const,
    registers: [registry],
    collect () {
      lag.reset()
      for (const replica of stats().replicas) {
        if (replica.lagMs !== undefined) lag.set({ host: replica.host }, replica.lagMs / 1000)
      }
    }
  })
  const inUse = new Gauge({
    name: 'db_replica_in_use',
    help: 'Whether each read replica is read from (1), or skipped (0): down, lagging past REPLICA_MAX_LAG_MS, or not yet shown to follow the primary.',
    labelNames: ['host'] as const,
    registers: [registry],
    collect () {
      inUse.reset()
      for (const replica of stats().replicas) inUse.set({ host: replica.host }, replica.state === 'in use' ? 1 : 0)
    }
  })
  const reads = new Counter({
    name: 'db_replica_reads_total',
    help: 'Catalogue reads by where they were answered: by a replica alone, by a replica with one question to the primary (confirmed), or by the primary.',
    labelNames: ['answered_by'] as const,
    registers: [registry],
    collect () {
      reads.reset()
      const { replica, confirmed, primary: onPrimary } = stats().replicaReads
      reads.inc({ answered_by: 'replica' }, replica)
      reads.inc({ answered_by: 'confirmed' }, confirmed)
      reads.inc({ answered_by: 'primary' }, onPrimary)
    }
  })
}
