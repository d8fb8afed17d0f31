import { isIP } from 'node:net'

export type StorageLocation =
  | { engine: 'sqlite', path: string }
  /** `url` is DATABASE_URL as given: one URL, or several separated by commas (see postgresUrls). */
  | { engine: 'postgres', url: string }

export const LOG_LEVELS = ['fatal', 'error', 'warn', 'info', 'debug', 'trace', 'silent'] as const
export type LogLevel = typeof LOG_LEVELS[number]

export interface Config {
  /** Address the HTTP server binds to. */
  host: string
  /** TCP port; 0 picks a free one. */
  port: number
  /** Worker processes serving HOST:PORT (node:cluster); 1 serves from this process alone. */
  webConcurrency: number
  storage: StorageLocation
  /** Maximum connections per instance in the PostgreSQL pool (one pool per host). */
  databasePoolSize: number
  /** PostgreSQL hot standbys that may answer catalogue reads and key lookups; empty reads from the primary only. */
  databaseReplicaUrls: string[]
  /** A replica whose replay lags the primary by more than this is not read from. */
  replicaMaxLagMs: number
  /** Most concurrent creates committed in one transaction (group commit); 1 commits each create alone. */
  writeBatchSize: number
  /** Longest a create waits for others to join its batch while the server is busy with other requests (5 on SQLite, 0 on PostgreSQL); 0 commits at the next turn. */
  writeBatchWaitMs: number
  /** SQLite's synchronous setting: 'full' syncs every commit; 'off' never syncs (benchmarks and disposable data only). */
  sqliteSynchronous: 'full' | 'off'
  /** Absolute base URL of the production API, ending in /v1; the OpenAPI document lists it as a server. */
  publicBaseUrl: string | undefined
  /** Absolute base URL of the staging API, ending in /v1. */
  stagingBaseUrl: string | undefined
  logLevel: LogLevel
  /** Per API key and minute; 0 turns rate limiting off. */
  rateLimitPerMinute: number
  /** Redis shared by all instances for rate-limit counters; undefined counts in memory per instance. */
  redisUrl: string | undefined
  /** Origins allowed to call the API from browsers; empty turns CORS off. */
  corsOrigins: string[]
  /** Event-loop delay above which requests are shed with 503; 0 turns shedding off. */
  loadShedEventLoopDelayMs: number
  /** Time allowed to receive a request's headers. */
  headersTimeoutMs: number
  /** Time allowed to receive a whole request. */
  requestTimeoutMs: number
  /** How long an idle keep-alive connection stays open. */
  keepAliveTimeoutMs: number
  /** Concurrent connections accepted per instance; more are refused. */
  maxConnections: number
  /** Bearer token GET /metrics requires; undefined: /metrics is not served. */
  metricsToken: string | undefined
  /** Whether requests are counted and GET /metrics exists. */
  metricsEnabled: boolean
  /**
   * Addresses or CIDR ranges of the reverse proxies whose X-Forwarded-For, -Proto and -Host
   * are believed (the client address for log-in throttling, HTTPS for Secure cookies);
   * empty believes none.
   */
  trustProxy: string[]
}

export const DEFAULT_SQLITE_PATH = './data/animal-store.sqlite'
const MAX_BASE_URL_LENGTH = 2048

export class ConfigError extends Error {
  constructor (readonly problems: string[]) {
    super(`invalid configuration:\n${problems.map((problem) => `  - ${problem}`).join('\n')}`)
  }
}

type Env = Record<string, string | undefined>

/** Reads the environment into a frozen Config; throws ConfigError naming every bad variable. */
export function loadConfig (env: Env): Readonly<Config> {
  const problems: string[] = []
  const fail = (variable: string, accepts: string, value: string): undefined => {
    problems.push(`${variable}=${JSON.stringify(value)} is invalid: ${accepts}`)
    return undefined
  }

  const host = readHost(env.HOST, fail)
  const port = readPort(env.PORT, fail)
  const webConcurrency = readInteger('WEB_CONCURRENCY', env.WEB_CONCURRENCY, 1, 64, fail)
  const storage = readStorage(env.DATABASE_URL, fail)
  const databasePoolSize = readInteger('DATABASE_POOL_SIZE', env.DATABASE_POOL_SIZE, 1, 1000, fail)
  const databaseReplicaUrls = readReplicaUrls(env.DATABASE_REPLICA_URLS, storage, fail)
  const replicaMaxLagMs = readInteger('REPLICA_MAX_LAG_MS', env.REPLICA_MAX_LAG_MS, 0, 3_600_000, fail)
  const writeBatchSize = readInteger('WRITE_BATCH_SIZE', env.WRITE_BATCH_SIZE, 1, 1000, fail)
  const writeBatchWaitMs = readInteger('WRITE_BATCH_WAIT_MS', env.WRITE_BATCH_WAIT_MS, 0, 1000, fail)
  const sqliteSynchronous = readSqliteSynchronous(env.SQLITE_SYNCHRONOUS, fail)
  const publicBaseUrl = readBaseUrl('PUBLIC_BASE_URL', env.PUBLIC_BASE_URL, fail)
  const stagingBaseUrl = readBaseUrl('STAGING_BASE_URL', env.STAGING_BASE_URL, fail)
  const logLevel = readLogLevel(env.LOG_LEVEL, fail)
  const rateLimitPerMinute = readInteger('RATE_LIMIT_PER_MINUTE', env.RATE_LIMIT_PER_MINUTE, 0, 1_000_000_000, fail)
  const redisUrl = readRedisUrl(env.REDIS_URL, fail)
  const corsOrigins = readOrigins(env.CORS_ORIGINS, fail)
  const loadShedEventLoopDelayMs = readInteger('LOAD_SHED_EVENT_LOOP_DELAY_MS', env.LOAD_SHED_EVENT_LOOP_DELAY_MS, 0, 60_000, fail)
  const headersTimeoutMs = readInteger('HEADERS_TIMEOUT_MS', env.HEADERS_TIMEOUT_MS, 100, 600_000, fail)
  const requestTimeoutMs = readInteger('REQUEST_TIMEOUT_MS', env.REQUEST_TIMEOUT_MS, 100, 3_600_000, fail)
  const keepAliveTimeoutMs = readInteger('KEEP_ALIVE_TIMEOUT_MS', env.KEEP_ALIVE_TIMEOUT_MS, 100, 3_600_000, fail)
  const maxConnections = readInteger('MAX_CONNECTIONS', env.MAX_CONNECTIONS, 1, 1_000_000, fail)
  const metricsToken = readToken('METRICS_TOKEN', env.METRICS_TOKEN, fail)
  const metricsEnabled = readBoolean('METRICS_ENABLED', env.METRICS_ENABLED, fail)
  const trustProxy = readTrustProxy(env.TRUST_PROXY, fail)

  if (problems.length > 0) throw new ConfigError(problems)
  return Object.freeze({
    host: host ?? '0.0.0.0',
    port: port ?? 8080,
    webConcurrency: webConcurrency ?? 1,
    storage: storage ?? { engine: 'sqlite' as const, path: DEFAULT_SQLITE_PATH },
    databasePoolSize: databasePoolSize ?? 10,
    databaseReplicaUrls: databaseReplicaUrls ?? [],
    replicaMaxLagMs: replicaMaxLagMs ?? 5000,
    writeBatchSize: writeBatchSize ?? 256,
    writeBatchWaitMs: writeBatchWaitMs ?? defaultWriteBatchWaitMs(storage?.engine ?? 'sqlite'),
    sqliteSynchronous: sqliteSynchronous ?? 'full',
    publicBaseUrl,
    stagingBaseUrl,
    logLevel: logLevel ?? 'info',
    rateLimitPerMinute: rateLimitPerMinute ?? 0,
    redisUrl,
    corsOrigins: corsOrigins ?? [],
    loadShedEventLoopDelayMs: loadShedEventLoopDelayMs ?? 1000,
    headersTimeoutMs: headersTimeoutMs ?? 10_000,
    requestTimeoutMs: requestTimeoutMs ?? 30_000,
    keepAliveTimeoutMs: keepAliveTimeoutMs ?? 72_000,
    maxConnections: maxConnections ?? 10_000,
    metricsToken,
    metricsEnabled: metricsEnabled ?? true,
    trustProxy: trustProxy ?? []
  })
}

type Fail = (variable: string, accepts: string, value: string) => undefined

function readHost (value: string | undefined, fail: Fail): string | undefined {
  if (value === undefined || value === '') return undefined
  return /^[0-9A-Za-z.:[\]-]+$/.test(value) ? value : fail('HOST', 'expected a host name or IP address', value)
}

function readPort (value: string | undefined, fail: Fail): number | undefined {
  if (value === undefined || value === '') return undefined
  const port = Number(value)
  return /^[0-9]{1,5}$/.test(value) && port <= 65535 ? port : fail('PORT', 'expected an integer from 0 to 65535', value)
}

function readInteger (variable: string, value: string | undefined, min: number, max: number, fail: Fail): number | undefined {
  if (value === undefined || value === '') return undefined
  const number = Number(value)
  return /^[0-9]{1,9}$/.test(value) && number >= min && number <= max ? number : fail(variable, `expected an integer from ${min} to ${max}`, value)
}

function readStorage (value: string | undefined, fail: Fail): StorageLocation | undefined {
  if (value === undefined || value === '') return undefined
  if (value.startsWith('sqlite:')) {
    const path = value.slice('sqlite:'.length).replace(/^\/\/(?=\/)/, '')
    return path === '' ? fail('DATABASE_URL', 'sqlite: needs a file path, as in sqlite:./data/animal-store.sqlite', value) : { engine: 'sqlite', path }
  }
  if (/^postgres(ql)?:\/\/./.test(value)) {
    const problem = postgresUrlsProblem(value)
    return problem === undefined ? { engine: 'postgres', url: value } : fail('DATABASE_URL', problem, redactUrl(value))
  }
  // A value without a scheme is most often the path of a SQLite file.
  const hint = /^[a-z][a-z0-9+.-]*:/i.test(value) ? '' : `; for a SQLite file at that path write DATABASE_URL=sqlite:${value}`
  return fail('DATABASE_URL', `expected sqlite:<path>, postgres://… or postgresql://… (several PostgreSQL hosts: their URLs separated by commas)${hint}`, redactUrl(value))
}

/**
 * The PostgreSQL URLs of a comma-separated list, one per host. A comma splits the list only where
 * the next URL begins, so a comma inside one URL (in a password, say) stays where it is.
 */
export function postgresUrls (value: string): string[] {
  return value.split(/,\s*(?=postgres(?:ql)?:\/\/)/).map((url) => url.trim())
}

function postgresUrlsProblem (value: string): string | undefined {
  for (const url of postgresUrls(value)) {
    if (!/^postgres(ql)?:\/\/./.test(url)) return 'expected PostgreSQL URLs (postgres://… or postgresql://…) separated by commas'
    // A comma splits the list only before the next URL, so a stray one would end up in the database name.
    if (url.endsWith(',')) return 'a comma with no URL after it: remove it, or write the next URL after it (postgres://h1/db,postgres://h2/db)'
    if (!URL.canParse(url)) return `${JSON.stringify(redactUrl(url))} is not a valid URL: check the host, the port and the characters to percent-encode`
    // libpq's postgres://h1,h2/db names several hosts in one URL; the pg driver would take "h1,h2" for one host name.
    const authority = /^postgres(?:ql)?:\/\/([^/?#]*)/.exec(url)?.[1] ?? ''
    if (authority.slice(authority.lastIndexOf('@') + 1).includes(',')) return 'expected one host per URL: write postgres://h1/db,postgres://h2/db rather than postgres://h1,h2/db'
  }
  return undefined
}

function readReplicaUrls (value: string | undefined, storage: StorageLocation | undefined, fail: Fail): string[] | undefined {
  if (value === undefined || value.trim() === '') return undefined
  if (storage?.engine !== 'postgres') return fail('DATABASE_REPLICA_URLS', 'replicas need DATABASE_URL to name PostgreSQL', redactUrl(value))
  const problem = postgresUrlsProblem(value.trim())
  return problem === undefined ? postgresUrls(value.trim()) : fail('DATABASE_REPLICA_URLS', problem, redactUrl(value))
}

function readBaseUrl (variable: string, value: string | undefined, fail: Fail): string | undefined {
  if (value === undefined || value === '') return undefined
  let url: URL
  try {
    url = new URL(value)
  } catch {
    return fail(variable, 'expected an absolute http(s) URL such as https://api.example.com/v1', value)
  }
  if (url.protocol !== 'http:' && url.protocol !== 'https:') return fail(variable, 'expected an http or https URL', value)
  if (url.search !== '' || url.hash !== '') return fail(variable, 'expected a URL without query or fragment', value)
  // Link headers carry it; the OpenAPI document states how long they can be.
  if (value.length > MAX_BASE_URL_LENGTH) return fail(variable, `expected a URL of at most ${MAX_BASE_URL_LENGTH} characters`, `${value.slice(0, 40)}…`)
  return value.replace(/\/+$/, '')
}

/**
 * SQLite commits on the event loop, so on a busy server a create waits up to 5 ms for others to
 * share its commit and sync. A PostgreSQL commit runs in the database while the next batch
 * gathers anyway: there, waiting only merged the two batches and left the loop idle.
 */
const defaultWriteBatchWaitMs = (engine: StorageLocation['engine']): number => engine === 'sqlite' ? 5 : 0

function readSqliteSynchronous (value: string | undefined, fail: Fail): 'full' | 'off' | undefined {
  if (value === undefined || value === '') return undefined
  return value === 'full' || value === 'off' ? value : fail('SQLITE_SYNCHRONOUS', 'expected full or off', value)
}

function readBoolean (variable: string, value: string | undefined, fail: Fail): boolean | undefined {
  if (value === undefined || value === '') return undefined
  if (value === 'true' || value === '1') return true
  if (value === 'false' || value === '0') return false
  return fail(variable, 'expected true or false', value)
}

function readToken (variable: string, value: string | undefined, fail: Fail): string | undefined {
  if (value === undefined || value === '') return undefined
  return /^[\x21-\x7e]{16,}$/.test(value) ? value : fail(variable, 'expected at least 16 visible ASCII characters', '****')
}

function readRedisUrl (value: string | undefined, fail: Fail): string | undefined {
  if (value === undefined || value === '') return undefined
  return /^rediss?:\/\/./.test(value) ? value : fail('REDIS_URL', 'expected redis://host:port or rediss://…', redactUrl(value))
}

function readOrigins (value: string | undefined, fail: Fail): string[] | undefined {
  if (value === undefined || value.trim() === '') return undefined
  const origins = value.split(',').map((origin) => origin.trim()).filter((origin) => origin !== '')
  const valid = origins.every((origin) => {
    try {
      return new URL(origin).origin === origin
    } catch {
      return false
    }
  })
  return valid ? origins : fail('CORS_ORIGINS', 'expected a comma-separated list of origins such as https://app.example.com', value)
}

/** proxy-addr's names for the private ranges, accepted as Fastify's trustProxy accepts them. */
const PROXY_RANGE_NAMES = ['loopback', 'linklocal', 'uniquelocal']

function readTrustProxy (value: string | undefined, fail: Fail): string[] | undefined {
  if (value === undefined || value.trim() === '') return undefined
  const entries = value.split(',').map((entry) => entry.trim()).filter((entry) => entry !== '')
  const valid = entries.every((entry) => {
    if (PROXY_RANGE_NAMES.includes(entry)) return true
    const [address = '', prefix, extra] = entry.split('/')
    const version = isIP(address)
    if (version === 0 || extra !== undefined) return false
    return prefix === undefined || (/^[0-9]{1,3}$/.test(prefix) && Number(prefix) <= (version === 4 ? 32 : 128))
  })
  return valid ? entries : fail('TRUST_PROXY', 'expected a comma-separated list of proxy addresses or CIDR ranges such as 10.0.0.0/8,127.0.0.1 (or loopback, linklocal, uniquelocal)', value)
}

function readLogLevel (value: string | undefined, fail: Fail): LogLevel | undefined {
  if (value === undefined || value === '') return undefined
  return (LOG_LEVELS as readonly string[]).includes(value) ? value as LogLevel : fail('LOG_LEVEL', `expected one of ${LOG_LEVELS.join(', ')}`, value)
}

/** Hides the passwords in a connection string, or a comma-separated list of them, before it is shown anywhere. */
export function redactUrl (value: string): string {
  return value.replace(/(\/\/[^:/@,]*:)[^@/]*@/g, '$1****@').replace(/([?&]password=)[^&,]*/gi, '$1****')
}
