import { Type, type Static, type TArray, type TInteger, type TSchema, type TString, type TUndefined, type TUnion } from 'typebox'
import { HASH_COST_BOUNDS, SCRYPT_PARAMS } from './core/passwords.js'

export type StorageLocation =
  | { engine: 'sqlite', path: string }
  /** `url` is DATABASE_URL as given: one URL, or several separated by commas (see postgresUrls). */
  | { engine: 'postgres', url: string }

export const LOG_LEVELS = ['fatal', 'error', 'warn', 'info', 'debug', 'trace', 'silent'] as const
export type LogLevel = typeof LOG_LEVELS[number]
export const LOG_FORMATS = ['auto', 'json', 'pretty'] as const

export const DEFAULT_SQLITE_PATH = './data/animal-store.sqlite'

/**
 * What the schema says of each environment variable besides its type, bounds and default:
 * `secret` is 'whole' when the value is shown as **** and 'password' when only the passwords of its URLs are;
 * `accepts` describes a value the type alone does not (formats a custom reader checks);
 * `defaultText` describes a default that is not one value; `guide` links the section that explains it.
 */
export type VariableMeta = {
  env: string
  description: string
  secret?: 'whole' | 'password'
  accepts?: string
  defaultText?: string
  guide?: { title: string, href: string }
}

export type VariableSchema = TSchema & VariableMeta & {
  default?: unknown
  minimum?: number
  maximum?: number
  enum?: readonly string[]
  type?: string
}

const optionalString = (meta: VariableMeta): TUnion<[TString, TUndefined]> =>
  Type.Union([Type.String(), Type.Undefined()], meta)
const integer = (minimum: number, maximum: number, fallback: number | undefined, meta: VariableMeta): TInteger =>
  Type.Integer({ minimum, maximum, ...(fallback === undefined ? {} : { default: fallback }), ...meta })
const list = (meta: VariableMeta): TArray<TString> =>
  Type.Array(Type.String(), { default: [], ...meta })

const MORE_CORES = { title: 'More cores', href: '#more-cores-web_concurrency' }
const REPLICATION = { title: 'Replication and failover', href: 'replication.md' }
const TEST_MODE = { title: 'Test mode', href: 'client-developers.md#test-mode' }
const TRACES = { title: 'Traces', href: '#traces' }

/**
 * Every environment variable the service reads, in the order `animal-store config` and the operations guide list them.
 * The key is the Config field; loadConfig, `animal-store config` and the guide's table are derived from this object.
 */
export const ConfigSchema = Type.Object({
  host: Type.String({ env: 'HOST', default: '0.0.0.0', accepts: 'host name or IP', description: 'address the server listens on' }),
  port: integer(0, 65535, 8080, { env: 'PORT', description: 'TCP port (`0` picks a free one)' }),
  webConcurrency: integer(1, 64, 1, { env: 'WEB_CONCURRENCY', description: 'worker processes serving `HOST:PORT` together (node:cluster); `1` serves from one process with no primary', guide: MORE_CORES }),
  storage: Type.Unsafe<StorageLocation>({
    type: 'string',
    env: 'DATABASE_URL',
    default: { engine: 'sqlite', path: DEFAULT_SQLITE_PATH },
    secret: 'password',
    accepts: '`sqlite:<path>`, `postgres://…` or `postgresql://…`; for PostgreSQL, several URLs separated by commas, one per host',
    description: 'where the data lives; for SQLite the folder is created. With several PostgreSQL hosts the service writes to the one that is not in recovery and follows a failover by itself',
    guide: REPLICATION
  }),
  databasePoolSize: integer(1, 1000, 10, { env: 'DATABASE_POOL_SIZE', description: 'PostgreSQL connections per instance and host (the primary\'s pool, and each replica\'s)' }),
  databaseReplicaUrls: list({
    env: 'DATABASE_REPLICA_URLS',
    secret: 'password',
    accepts: 'comma-separated `postgres://…` URLs',
    description: 'PostgreSQL hot standbys that may answer catalogue reads and key lookups, only when the answer is provably the primary\'s; needs a PostgreSQL `DATABASE_URL`',
    guide: REPLICATION
  }),
  replicaMaxLagMs: integer(0, 3_600_000, 5000, { env: 'REPLICA_MAX_LAG_MS', description: 'a replica further behind the primary than this is not read from (its reads go to the primary); `0` reads everything from the primary' }),
  writeBatchSize: integer(1, 1000, 256, { env: 'WRITE_BATCH_SIZE', description: 'most concurrent creates committed in one transaction (group commit); `1` commits each create alone (the benchmark uses it to show what group commit buys)' }),
  writeBatchWaitMs: integer(0, 1000, undefined, {
    env: 'WRITE_BATCH_WAIT_MS',
    defaultText: '`5` on SQLite, `0` on PostgreSQL',
    description: 'longest a create waits for others to join its batch while the server is busy with other requests; a create on an idle server is committed at once. `0` commits every batch at the next turn of the event loop',
    guide: { title: 'What makes it fast', href: 'performance.md#what-makes-it-fast' }
  }),
  sqliteSynchronous: Type.Enum(['full', 'off'], {
    env: 'SQLITE_SYNCHRONOUS',
    default: 'full',
    description: '`full` syncs the WAL before any write is acknowledged; `off` never syncs: for benchmarks and disposable data only, and the service logs a warning at start',
    guide: { title: 'Durability', href: '#run-time-behaviour' }
  }),
  publicBaseUrl: optionalString({ env: 'PUBLIC_BASE_URL', accepts: 'absolute http(s) URL ending in `/v1`', defaultText: 'unset (`/v1`, relative)', description: 'production server in the OpenAPI document and base of `Link` headers' }),
  stagingBaseUrl: optionalString({ env: 'STAGING_BASE_URL', accepts: 'absolute http(s) URL ending in `/v1`', description: 'staging server in the OpenAPI document' }),
  logLevel: Type.Enum(LOG_LEVELS, { env: 'LOG_LEVEL', default: 'info', description: 'log verbosity' }),
  logFormat: Type.Enum(LOG_FORMATS, {
    env: 'LOG_FORMAT',
    default: 'auto',
    description: 'how log lines are written: `pretty`, one readable line each; `json`, one JSON object each; `auto`, pretty on a terminal and JSON on a pipe or a file'
  }),
  rateLimitPerMinute: integer(0, 1_000_000_000, 0, { env: 'RATE_LIMIT_PER_MINUTE', defaultText: '`0` (off)', description: 'requests per API key per minute; over it: 429 `rate_limited`' }),
  sandboxRateLimitPerMinute: integer(1, 1_000_000_000, 1000, { env: 'SANDBOX_RATE_LIMIT_PER_MINUTE', description: 'requests per test key per minute (test mode), instead of `RATE_LIMIT_PER_MINUTE`; over it: 429 `rate_limited`', guide: TEST_MODE }),
  sandboxMaxPets: integer(1, 1_000_000_000, 10_000, { env: 'SANDBOX_MAX_PETS', description: 'most animals an account\'s sandbox holds (test mode); `createPet` beyond it: 403 `sandbox_full`', guide: TEST_MODE }),
  redisUrl: optionalString({
    env: 'REDIS_URL',
    secret: 'password',
    accepts: '`redis://…` or `rediss://…`',
    description: 'share rate limits through Redis so all instances have one budget (each instance counts alone otherwise)',
    guide: { title: 'Rate limits', href: '#rate-limits-with-several-instances' }
  }),
  corsOrigins: list({ env: 'CORS_ORIGINS', accepts: 'comma-separated origins', defaultText: 'unset (CORS off)', description: 'browser origins allowed to call the API' }),
  loadShedEventLoopDelayMs: integer(0, 60_000, 1000, { env: 'LOAD_SHED_EVENT_LOOP_DELAY_MS', description: 'event-loop delay above which requests are shed with 503; `0` turns shedding off' }),
  headersTimeoutMs: integer(100, 600_000, 10_000, { env: 'HEADERS_TIMEOUT_MS', description: 'time a client has to send its request headers' }),
  requestTimeoutMs: integer(100, 3_600_000, 30_000, { env: 'REQUEST_TIMEOUT_MS', description: 'time a client has to send its whole request' }),
  keepAliveTimeoutMs: integer(100, 3_600_000, 72_000, { env: 'KEEP_ALIVE_TIMEOUT_MS', description: 'idle keep-alive connections are closed after this (keep it above your load balancer\'s idle timeout)' }),
  maxConnections: integer(1, 1_000_000, 10_000, { env: 'MAX_CONNECTIONS', description: 'concurrent connections per instance; more are refused' }),
  metricsToken: optionalString({
    env: 'METRICS_TOKEN',
    secret: 'whole',
    accepts: 'at least 16 visible ASCII characters',
    defaultText: 'unset (`/metrics` not served)',
    description: 'bearer token that `GET /metrics` requires; without it `/metrics` is not served at all'
  }),
  metricsEnabled: Type.Boolean({ env: 'METRICS_ENABLED', default: true, description: 'count requests and serve `GET /metrics` (the benchmark turns it off to measure what metrics cost)' }),
  smtpUrl: optionalString({
    env: 'SMTP_URL',
    secret: 'password',
    accepts: '`smtp://…` or `smtps://…` (user and password in the URL)',
    defaultText: 'unset (each message is written to the log at `info`)',
    description: 'mail server the outbox sends through: verification and password reset links, security notices',
    guide: { title: 'Mail', href: '#mail' }
  }),
  mailFrom: Type.String({ env: 'MAIL_FROM', default: 'Animal Store <no-reply@localhost>', accepts: 'an address, optionally with a name', description: 'sender (`From`) of every message' }),
  mailGiveUpAfterMs: integer(1000, 7 * 86_400_000, 86_400_000, { env: 'MAIL_GIVE_UP_AFTER_MS', description: 'a message still not sent this long after it was written is marked `failed` in the outbox (retries back off exponentially until then)' }),
  passwordHashCost: integer(HASH_COST_BOUNDS.min, HASH_COST_BOUNDS.max, SCRYPT_PARAMS.logN, {
    env: 'PASSWORD_HASH_COST',
    description: 'scrypt\'s cost N as a power of two (r=8, p=1): each step doubles a password check\'s CPU time and memory (`17`: about 128 MiB); hashes made at another cost are remade at the account\'s next log-in',
    guide: { title: 'Password hashing', href: '#password-hashing' }
  }),
  trustProxy: list({
    env: 'TRUST_PROXY',
    accepts: 'comma-separated IPs or CIDR ranges (or `loopback`, `linklocal`, `uniquelocal`)',
    defaultText: 'unset (trust none)',
    description: 'reverse proxies whose `X-Forwarded-For`/`-Proto`/`-Host` are believed: the client address the portal throttles log-ins by, and HTTPS for `Secure` cookies'
  }),
  otelEndpoint: optionalString({
    env: 'OTEL_EXPORTER_OTLP_ENDPOINT',
    secret: 'password',
    accepts: 'absolute http(s) URL',
    defaultText: 'unset (no tracing)',
    description: 'OpenTelemetry collector: setting it turns tracing on, and spans go to its `/v1/traces` as OTLP/HTTP',
    guide: TRACES
  }),
  otelTracesEndpoint: optionalString({
    env: 'OTEL_EXPORTER_OTLP_TRACES_ENDPOINT',
    secret: 'password',
    accepts: 'absolute http(s) URL',
    defaultText: 'unset (`OTEL_EXPORTER_OTLP_ENDPOINT` + `/v1/traces`)',
    description: 'where spans are sent, as is; setting it turns tracing on too',
    guide: TRACES
  }),
  otelServiceName: Type.String({ env: 'OTEL_SERVICE_NAME', default: 'animal-store', description: 'the `service.name` of every span', guide: TRACES }),
  otelTracesSampler: Type.Enum(['parentbased_always_on', 'parentbased_always_off', 'parentbased_traceidratio', 'always_on', 'always_off', 'traceidratio'], {
    env: 'OTEL_TRACES_SAMPLER',
    default: 'parentbased_always_on',
    description: 'which requests are traced; `parentbased_*` follows the caller\'s `traceparent` decision when it sent one',
    guide: TRACES
  }),
  otelTracesSamplerArg: Type.Union([Type.Number(), Type.Undefined()], {
    env: 'OTEL_TRACES_SAMPLER_ARG',
    accepts: 'number 0–1',
    defaultText: '`1`',
    description: 'the share of traces the `*traceidratio` samplers keep (`0.1`: one in ten)',
    guide: TRACES
  })
})

export type Config = Static<typeof ConfigSchema>
export type ConfigKey = keyof Config

/** Each variable's Config field and schema, in the schema's order. */
export const VARIABLES = Object.entries(ConfigSchema.properties) as unknown as Array<[ConfigKey, VariableSchema]>
