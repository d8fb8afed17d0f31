import { createRequire } from 'node:module'
import type pg from 'pg'
import { StoreUnavailableError, type ReplicationStats } from '../store.js'

/**
 * Several PostgreSQL hosts: which one takes writes, and how far each read replica lags it.
 *
 * The pg driver connects to one host. libpq's multi-host strings with target_session_attrs=read-write
 * pick the writable host when a connection opens; this module does the same for the pool, and keeps
 * watching, because after a failover the service must follow the promoted standby by itself.
 *
 * - Every host is probed in the background (every PROBE_MS, and at once when a statement on the
 *   primary fails with a connection error or SQLSTATE 25006 read_only_sql_transaction) on a
 *   connection of its own, so a busy pool never delays the probe.
 * - The primary is the host that is neither in recovery nor read-only. If several are (an old primary
 *   restarted without being demoted), the one on the highest timeline wins: the promoted standby.
 * - Each new connection of the primary's pool checks the server is writable before it is used (as
 *   libpq's read-write check does), so a statement meant for the primary never runs on a standby.
 * - Replica lag is measured without any write of ours: each probe of the primary records its WAL
 *   position (pg_current_wal_lsn) against our own clock; each probe of a replica reads how far it has
 *   replayed (pg_last_wal_replay_lsn). A replica that has replayed position P taken from the primary
 *   at time T holds everything the primary held at T, so its lag is at most now - T. This needs no
 *   clock agreement between machines, stays right while the primary is idle (unlike
 *   now() - pg_last_xact_replay_timestamp()), and needs no privilege beyond connecting.
 */

/** What the repositories need of a pool: pg.Pool has it, and so has the primary's pool, which follows failovers. */
export interface PoolLike {
  query: <Row extends pg.QueryResultRow>(config: pg.QueryConfig) => Promise<pg.QueryResult<Row>>
  connect: () => Promise<pg.PoolClient>
  on: (event: 'error', listener: (error: Error) => void) => unknown
  end: () => Promise<void>
  readonly totalCount: number
  readonly idleCount: number
  readonly waitingCount: number
}

export interface HostsOptions {
  poolSize: number
  connectTimeoutMs: number
  statementTimeoutMs: number
  /** Hot standbys that may answer reads. */
  replicaUrls?: readonly string[]
  /** A replica lagging more than this is not read from. */
  replicaMaxLagMs?: number
  /** Background failures, such as an idle connection dropped by the server. */
  onError: (error: unknown) => void
  /** What an operator should see: the primary changed, or no host takes writes. */
  onWarning: (message: string) => void
}

/** A position in the primary's write-ahead log, valid only while the same primary serves (`epoch`). */
export interface WalPosition { epoch: number, lsn: bigint }

/** Probes run this often with read replicas (the precision of their lag), and this often without. */
const PROBE_MS = 250
const PROBE_MS_WITHOUT_REPLICAS = 1000
/** A replica whose last successful probe is older than this is not read from (it may hang). */
const REPLICA_SAMPLE_STALE_MS = 2000
/** How far back the primary's WAL positions are kept, beyond the lag limit. */
const SAMPLE_HISTORY_MS = 60_000

// One statement for any role: pg_walfile_name names the primary's timeline, which only rises when a standby is promoted.
const PROBE_SQL = `SELECT pg_is_in_recovery() AS in_recovery,
  current_setting('transaction_read_only') = 'on' AS read_only,
  (CASE WHEN pg_is_in_recovery() THEN pg_last_wal_replay_lsn() ELSE pg_current_wal_lsn() END - '0/0')::text AS lsn,
  (pg_last_wal_receive_lsn() - '0/0')::text AS received,
  CASE WHEN pg_is_in_recovery() THEN NULL ELSE ('x' || substr(pg_walfile_name(pg_current_wal_lsn()), 1, 8))::bit(32)::int END AS timeline`

interface ProbeRow { in_recovery: boolean, read_only: boolean, lsn: string | null, received: string | null, timeline: number | null }

type Sample =
  | { up: true, at: number, writable: boolean, inRecovery: boolean, lsn: bigint, received: bigint | undefined, timeline: number }
  | { up: false, at: number, reason: string, error: unknown }

/** A host, for messages, metrics and /readyz: host:port/database, never the user or password. */
export function hostLabel (url: string): string {
  try {
    const parsed = new URL(url)
    const host = parsed.hostname !== '' ? parsed.hostname : (parsed.searchParams.get('host') ?? 'localhost')
    return `${host}:${parsed.port === '' ? '5432' : parsed.port}${parsed.pathname}`
  } catch {
    return 'unparsable URL'
  }
}

const now = (): number => performance.now()
const reasonOf = (error: unknown): string => {
  const { code, message } = error as { code?: string, message?: string }
  return [code, message].filter((part) => part !== undefined && part !== '').join(' ') || String(error)
}

/** Whether a failed statement may mean the primary has gone or changed: then look for it again. */
function pointsAtFailover (error: unknown): boolean {
  if (error instanceof NotPrimaryError) return true
  const { code, severity } = error as { code?: unknown, severity?: unknown }
  // Not an error the server sent (it has a severity): the socket failed or timed out.
  if (severity === undefined) return true
  // 08: connection exceptions; 57P0x: shutting down, crashed or starting; 25006: read-only.
  return typeof code === 'string' && /^(08|57P0|25006)/.test(code)
}

class NotPrimaryError extends Error {
  constructor (label: string) {
    super(`${label} is in recovery or read-only: not the primary`)
  }
}

type PgModule = typeof pg

class Host {
  readonly label: string
  sample: Sample | undefined
  private poolInstance: pg.Pool | undefined
  private probeClient: pg.Client | undefined
  private probing: Promise<Sample> | undefined
  private closed = false

  constructor (readonly url: string, private readonly driver: PgModule, private readonly options: HostsOptions, private readonly writer: boolean) {
    this.label = hostLabel(url)
  }

  get pool (): pg.Pool {
    if (this.poolInstance === undefined) {
      this.poolInstance = new this.driver.Pool({
        connectionString: this.url,
        max: this.options.poolSize,
        connectionTimeoutMillis: this.options.connectTimeoutMs,
        statement_timeout: this.options.statementTimeoutMs,
        query_timeout: this.options.statementTimeoutMs + 1000,
        idleTimeoutMillis: 30_000,
        // The read-write check libpq makes for target_session_attrs=read-write, once per connection.
        onConnect: this.writer ? async (client) => await this.checkWritable(client) : undefined
      })
      // The primary's pools report here; a replica's pool gets its listener from the store built on it.
      if (this.writer) this.poolInstance.on('error', this.options.onError)
    }
    return this.poolInstance
  }

  /** libpq's check, word for word: a hot standby answers on, and so does a primary an operator made read-only. */
  private async checkWritable (client: pg.ClientBase): Promise<void> {
    const { rows } = await client.query<{ transaction_read_only: string }>('SHOW transaction_read_only')
    if (rows[0]?.transaction_read_only !== 'off') throw new NotPrimaryError(this.label)
  }

  /** One probe at a time per host; a caller arriving meanwhile shares it. */
  async probe (): Promise<Sample> {
    this.probing ??= this.runProbe().finally(() => { this.probing = undefined })
    return await this.probing
  }

  private async runProbe (): Promise<Sample> {
    try {
      if (this.probeClient === undefined) {
        const client = new this.driver.Client({
          connectionString: this.url,
          connectionTimeoutMillis: this.options.connectTimeoutMs,
          statement_timeout: this.options.connectTimeoutMs,
          query_timeout: this.options.connectTimeoutMs
        })
        client.on('error', () => { this.dropProbeClient(client) })
        this.probeClient = client
        await client.connect()
      }
      const row = await this.probeClient.query<ProbeRow>(PROBE_SQL).then(({ rows }) => rows[0], async (error: unknown) => {
        // A PostgreSQL-compatible engine without these functions (42883): a host that takes writes is the primary, and has no replicas to measure.
        if ((error as { code?: string }).code !== '42883' || this.probeClient === undefined) throw error
        const { rows: [{ transaction_read_only: readOnly } = { transaction_read_only: 'on' }] } = await this.probeClient.query<{ transaction_read_only: string }>('SHOW transaction_read_only')
        return { in_recovery: false, read_only: readOnly !== 'off', lsn: '0', received: null, timeline: 0 }
      })
      if (row === undefined || row.lsn === null) throw new Error('the probe returned no position')
      this.sample = {
        up: true,
        at: now(),
        writable: !row.in_recovery && !row.read_only,
        inRecovery: row.in_recovery,
        lsn: BigInt(row.lsn),
        received: row.received === null ? undefined : BigInt(row.received),
        timeline: row.timeline ?? 0
      }
    } catch (error) {
      if (this.probeClient !== undefined) this.dropProbeClient(this.probeClient)
      this.sample = { up: false, at: now(), reason: reasonOf(error), error }
    }
    return this.sample
  }

  private dropProbeClient (client: pg.Client): void {
    if (this.probeClient === client) this.probeClient = undefined
    client.end().catch(() => {})
  }

  /** A statement on this host failed for a reason that makes it unfit to read from until the next probe says otherwise. */
  markDown (error: unknown): void {
    this.sample = { up: false, at: now(), reason: reasonOf(error), error }
  }

  async close (): Promise<void> {
    if (this.closed) return
    this.closed = true
    await Promise.all([this.poolInstance?.end(), this.probeClient?.end()].map(async (ending) => await ending?.catch(() => {})))
  }
}

/** A read replica: a host and the position below which its WAL cannot be trusted to be the primary's (see floor). */
export class Replica {
  /**
   * The replica's received (or replayed) position when first seen under the current primary. Past a
   * failover, an asynchronous standby may hold WAL the promoted one never got, on the old timeline: it
   * can never replay the new primary's WAL beyond that point. So a replica is read from only once it has
   * replayed a position the primary reported above its floor, which a diverged replica never does.
   */
  floor: bigint | undefined
  floorEpoch = -1
  /** The state last reported to operators; undefined until it was first in use (catching up at start is no news). */
  reported: ReplicaStatus['state'] | undefined

  constructor (readonly host: Host) {}

  get label (): string { return this.host.label }
}

export type ReplicationStatus = Omit<ReplicationStats, 'replicaReads'>
type ReplicaStatus = ReplicationStatus['replicas'][number]

export class PostgresHosts {
  /** The pool that runs every statement meant for the primary, wherever the primary is now. */
  readonly primary: PoolLike
  readonly replicas: Replica[]
  private readonly hosts: Host[]
  private current: Host | undefined
  private identity: string | undefined
  /** Moves whenever the primary changes: WAL positions of one primary say nothing about the next. */
  private epoch = 0
  private samples: Array<{ at: number, lsn: bigint }> = []
  private round: Promise<void> | undefined
  private nudging = false
  private nextReplica = 0
  private warnedSeveralWritable = false
  private readonly listeners = new Set<() => void>()
  private readonly timer: NodeJS.Timeout
  private closing: Promise<void> | undefined

  constructor (urls: readonly string[], private readonly options: HostsOptions) {
    if (urls.length === 0) throw new Error('no PostgreSQL URL')
    // Loaded on first use: a service on SQLite never pays for the driver at start-up or in memory.
    const driver = createRequire(import.meta.url)('pg') as PgModule
    this.hosts = urls.map((url) => new Host(url, driver, options, true))
    this.replicas = (options.replicaUrls ?? []).map((url) => new Replica(new Host(url, driver, options, false)))
    this.primary = new PrimaryPool(this)
    this.timer = setInterval(() => { void this.probeRound() }, this.replicas.length > 0 ? PROBE_MS : PROBE_MS_WITHOUT_REPLICAS).unref()
  }

  /** Called after a new primary has been found (not at the first): whatever was read from the old one may be gone. */
  onPrimaryChange (listener: () => void): void {
    this.listeners.add(listener)
  }

  /** The pool of the current primary, for its occupancy. */
  currentPool (): pg.Pool | undefined {
    return this.current?.pool
  }

  get hostCount (): number {
    return this.hosts.length
  }

  /** The primary, searching for it if none is known; throws StoreUnavailableError when no host takes writes. */
  async writer (): Promise<Host> {
    if (this.current !== undefined) return this.current
    // Requests arriving meanwhile share the round; a host that refuses connections answers at once,
    // one that does not answer takes the connect timeout: a bounded wait either way.
    await this.probeRound()
    if (this.current !== undefined) return this.current
    throw this.noPrimary()
  }

  /** A statement on the primary failed: look for the primary again if the failure may mean it moved. */
  failed (error: unknown): void {
    if (pointsAtFailover(error) && this.round === undefined) void this.probeRound()
  }

  /** Where the primary's WAL is now: everything committed before this call is at or below it. */
  async primaryPosition (): Promise<WalPosition> {
    const epoch = this.epoch
    const { rows: [row] } = await this.primary.query<{ lsn: string }>({ text: "SELECT (pg_current_wal_lsn() - '0/0')::text AS lsn" })
    if (row === undefined) throw new Error('pg_current_wal_lsn returned no row')
    return { epoch, lsn: BigInt(row.lsn) }
  }

  /**
   * A replica to read from now, taken in turn among those within the lag limit; with `covering`, only one
   * that has replayed at least that position of the current primary. Undefined: read from the primary.
   */
  chooseReplica (covering?: WalPosition): Replica | undefined {
    if (covering !== undefined && covering.epoch !== this.epoch) return undefined
    const count = this.replicas.length
    for (let tried = 0; tried < count; tried++) {
      const replica = this.replicas[this.nextReplica++ % count] as Replica
      const lag = this.lagOf(replica)
      if (lag === undefined || lag > (this.options.replicaMaxLagMs ?? 5000)) continue
      const sample = replica.host.sample
      if (covering !== undefined && !(sample?.up === true && sample.lsn >= covering.lsn)) continue
      return replica
    }
    return undefined
  }

  /** A read on the replica failed with a connection error: skip it until a probe finds it up again. */
  replicaFailed (replica: Replica, error: unknown): void {
    replica.host.markDown(error)
  }

  /** How far behind the primary the replica is at most, in milliseconds; undefined when it cannot be read from at all. */
  private lagOf (replica: Replica): number | undefined {
    const sample = replica.host.sample
    if (this.current === undefined || sample?.up !== true || !sample.inRecovery) return undefined
    if (replica.floor === undefined || replica.floorEpoch !== this.epoch) return undefined
    const at = now()
    if (at - sample.at > REPLICA_SAMPLE_STALE_MS) return undefined
    for (let index = this.samples.length - 1; index >= 0; index--) {
      const primary = this.samples[index] as { at: number, lsn: bigint }
      // Positions only grow: the first one at or below the replica's is the latest it has replayed.
      if (primary.lsn <= sample.lsn) return primary.lsn > replica.floor ? at - primary.at : undefined
    }
    return undefined
  }

  status (): ReplicationStatus {
    const current = this.current
    return {
      primary: current?.label,
      timeline: current?.sample?.up === true ? current.sample.timeline : undefined,
      hosts: this.hosts.map((host) => ({ host: host.label, role: roleOf(host, current) })),
      replicas: this.replicas.map((replica) => this.replicaStatus(replica))
    }
  }

  private replicaStatus (replica: Replica): ReplicaStatus {
    const sample = replica.host.sample
    const lagMs = this.lagOf(replica)
    if (sample?.up !== true) return { host: replica.label, state: 'down', lagMs: undefined }
    if (!sample.inRecovery) return { host: replica.label, state: 'not a standby', lagMs: undefined }
    if (lagMs === undefined) return { host: replica.label, state: 'catching up', lagMs: undefined }
    return { host: replica.label, state: lagMs > (this.options.replicaMaxLagMs ?? 5000) ? 'lagging' : 'in use', lagMs: Math.round(lagMs) }
  }

  /** Operators hear when a replica stops being read from, and when it is read from again. */
  private reportReplicaStates (): void {
    for (const replica of this.replicas) {
      const { state } = this.replicaStatus(replica)
      const sample = replica.host.sample
      if (replica.reported === 'in use' && state !== 'in use') {
        this.options.onWarning(`read replica ${replica.label} is not read from (${state}${sample?.up === false ? `: ${sample.reason}` : ''}): its reads go to the primary`)
      } else if (replica.reported !== undefined && replica.reported !== 'in use' && state === 'in use') {
        this.options.onWarning(`read replica ${replica.label} is read from again`)
      }
      if (state === 'in use' || replica.reported !== undefined) replica.reported = state
    }
  }

  /** Probes every host at once (one round at a time), then decides which is the primary and how far replicas lag. */
  async probeRound (): Promise<void> {
    if (this.closing !== undefined) return
    this.round ??= (async () => {
      const everyone = [...this.hosts, ...this.replicas.map((replica) => replica.host)]
      await Promise.all(everyone.map(async (host) => await host.probe()))
      this.choosePrimary()
      this.recordPrimaryPosition()
      this.placeFloors()
      this.reportReplicaStates()
    })().finally(() => { this.round = undefined })
    await this.round
  }

  private choosePrimary (): void {
    const writable = this.hosts.filter((host) => host.sample?.up === true && host.sample.writable)
    const timelineOf = (host: Host): number => (host.sample?.up === true ? host.sample.timeline : 0)
    const highest = Math.max(...writable.map(timelineOf))
    const candidates = writable.filter((host) => timelineOf(host) === highest)
    const chosen = this.current !== undefined && candidates.includes(this.current) ? this.current : candidates[0]
    if (writable.length > 1 && !this.warnedSeveralWritable) {
      this.warnedSeveralWritable = true
      this.options.onWarning(`several PostgreSQL hosts accept writes (${writable.map((host) => `${host.label} on timeline ${timelineOf(host)}`).join(', ')}): ` +
        `writing to ${chosen?.label ?? 'none'}; an old primary must be demoted or rewound before it rejoins`)
    }
    if (chosen === this.current) return
    const previous = this.current
    this.current = chosen
    if (chosen === undefined) {
      const states = this.hosts.map((host) => `${host.label}: ${host.sample?.up === true ? 'standby' : `down (${host.sample?.up === false ? host.sample.reason : 'not probed'})`}`)
      this.options.onWarning(`no PostgreSQL host accepts writes (${states.join('; ')}): answering 503 until one does`)
      return
    }
    const identity = `${chosen.label}#${timelineOf(chosen)}`
    if (this.identity !== undefined && identity !== this.identity) {
      this.epoch++
      this.samples = []
      this.options.onWarning(`the PostgreSQL primary is now ${chosen.label} (timeline ${timelineOf(chosen)}), was ${previous?.label ?? this.identity}`)
      for (const listener of this.listeners) listener()
    }
    this.identity = identity
  }

  private recordPrimaryPosition (): void {
    const sample = this.current?.sample
    if (sample?.up !== true || !sample.writable) return
    this.samples.push({ at: sample.at, lsn: sample.lsn })
    const oldest = sample.at - SAMPLE_HISTORY_MS - (this.options.replicaMaxLagMs ?? 5000)
    while (this.samples.length > 2 && (this.samples[0]?.at ?? 0) < oldest) this.samples.shift()
  }

  private placeFloors (): void {
    const primaryLsn = this.samples.at(-1)?.lsn
    let waiting = false
    for (const replica of this.replicas) {
      const sample = replica.host.sample
      if (sample?.up !== true || !sample.inRecovery) {
        // A replica coming back may have been rebuilt from anywhere: it earns trust again.
        replica.floor = undefined
        continue
      }
      if (replica.floor === undefined || replica.floorEpoch !== this.epoch) {
        replica.floor = sample.received !== undefined && sample.received > sample.lsn ? sample.received : sample.lsn
        replica.floorEpoch = this.epoch
      }
      if (primaryLsn !== undefined && primaryLsn <= replica.floor) waiting = true
    }
    if (waiting) this.nudge()
  }

  /**
   * A primary that writes nothing would leave a new replica untrusted for ever: taking a transaction id
   * makes its commit write a few bytes of WAL, which moves the position past the replica's floor.
   */
  private nudge (): void {
    if (this.nudging || this.current === undefined) return
    this.nudging = true
    this.primary.query({ text: 'SELECT pg_current_xact_id()' })
      .catch(() => {})
      .finally(() => { this.nudging = false })
  }

  private noPrimary (): StoreUnavailableError {
    // One host that cannot be reached: its own error says most, and says it plainly.
    const only = this.hosts.length === 1 ? this.hosts[0]?.sample : undefined
    if (only?.up === false) return new StoreUnavailableError(only.error)
    const states = this.hosts.map((host) => `${host.label}: ${host.sample === undefined ? 'not probed' : host.sample.up ? 'not writable' : host.sample.reason}`)
    return new StoreUnavailableError(new Error(`no PostgreSQL host accepts writes (${states.join('; ')})`))
  }

  async close (): Promise<void> {
    this.closing ??= (async () => {
      clearInterval(this.timer)
      await this.round?.catch(() => {})
      await Promise.all([...this.hosts, ...this.replicas.map((replica) => replica.host)].map(async (host) => await host.close()))
    })()
    await this.closing
  }
}

function roleOf (host: Host, current: Host | undefined): ReplicationStatus['hosts'][number]['role'] {
  if (host === current) return 'primary'
  const sample = host.sample
  if (sample === undefined) return 'unknown'
  if (!sample.up) return 'down'
  return sample.writable ? 'writable' : 'standby'
}

const WATCHED = Symbol('watched by PostgresHosts')

/**
 * The pool of whichever host is the primary now. Statements that fail there may start a search
 * for the primary; a commit that PostgreSQL did not confirm on a synchronous standby fails.
 */
class PrimaryPool implements PoolLike {
  constructor (private readonly hosts: PostgresHosts) {}

  async connect (): Promise<pg.PoolClient> {
    const host = await this.hosts.writer()
    let client: pg.PoolClient
    try {
      client = await host.pool.connect()
    } catch (error) {
      this.hosts.failed(error)
      throw error instanceof NotPrimaryError ? new StoreUnavailableError(error) : error
    }
    return this.watch(client)
  }

  async query<Row extends pg.QueryResultRow> (config: pg.QueryConfig): Promise<pg.QueryResult<Row>> {
    const client = await this.connect()
    try {
      const result = await client.query<Row>(config)
      client.release()
      return result
    } catch (error) {
      // As pg.Pool's own query does: a connection whose statement failed is not reused.
      client.release(error as Error)
      throw error
    }
  }

  /**
   * With synchronous replication, a commit waits for the standby; if that wait is cancelled (the
   * statement timeout, pg_cancel_backend), PostgreSQL ends it with a WARNING and reports success
   * although the standby may not have the commit. Such a create must not be acknowledged: it fails
   * here (503), and the client may retry (with Idempotency-Key, without creating it twice).
   */
  private watch (client: pg.PoolClient): pg.PoolClient {
    const watched = client as pg.PoolClient & { [WATCHED]?: true }
    if (watched[WATCHED] === true) return client
    watched[WATCHED] = true
    // pg.Pool listens for a connection's errors only while it is idle; checked out, the statement in
    // flight fails with the error anyway, and an 'error' event nobody listens to would end the process.
    client.on('error', (error) => { this.hosts.failed(error) })
    let unconfirmed: string | undefined
    client.on('notice', (notice) => {
      if ((notice as { routine?: string }).routine === 'SyncRepWaitForLSN') unconfirmed = notice.message
    })
    const query = client.query.bind(client) as (...args: unknown[]) => unknown
    const hosts = this.hosts
    const wrapped = (...args: unknown[]): unknown => {
      if (typeof args.at(-1) === 'function') return query(...args)
      unconfirmed = undefined
      return (query(...args) as Promise<pg.QueryResult>).then((result) => {
        if (unconfirmed !== undefined) {
          throw new StoreUnavailableError(new Error(`the commit was not confirmed by a synchronous standby: ${unconfirmed}`))
        }
        return result
      }, (error: unknown) => {
        hosts.failed(error)
        throw error
      })
    }
    client.query = wrapped as typeof client.query
    return client
  }

  /** Each host's pool reports its background errors to HostsOptions.onError already. */
  on (): this {
    return this
  }

  async end (): Promise<void> {
    await this.hosts.close()
  }

  private get pool (): pg.Pool | undefined {
    return this.hosts.currentPool()
  }

  get totalCount (): number { return this.pool?.totalCount ?? 0 }
  get idleCount (): number { return this.pool?.idleCount ?? 0 }
  get waitingCount (): number { return this.pool?.waitingCount ?? 0 }
}
