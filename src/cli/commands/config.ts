import { parseArgs } from 'node:util'
import { loadConfig, redactUrl, type Config } from '../../config.js'
import type { Command } from '../context.js'

const MASK = '****'

/** Each variable with the effective value, secrets masked. */
function describe (config: Readonly<Config>): Array<[string, string]> {
  const storage = config.storage.engine === 'sqlite' ? `sqlite:${config.storage.path}` : redactUrl(config.storage.url)
  return [
    ['HOST', config.host],
    ['PORT', String(config.port)],
    ['WEB_CONCURRENCY', String(config.webConcurrency)],
    ['DATABASE_URL', storage],
    ['DATABASE_POOL_SIZE', String(config.databasePoolSize)],
    ['DATABASE_REPLICA_URLS', redactUrl(config.databaseReplicaUrls.join(','))],
    ['REPLICA_MAX_LAG_MS', String(config.replicaMaxLagMs)],
    ['WRITE_BATCH_SIZE', String(config.writeBatchSize)],
    ['WRITE_BATCH_WAIT_MS', String(config.writeBatchWaitMs)],
    ['SQLITE_SYNCHRONOUS', config.sqliteSynchronous],
    ['PUBLIC_BASE_URL', config.publicBaseUrl ?? ''],
    ['STAGING_BASE_URL', config.stagingBaseUrl ?? ''],
    ['LOG_LEVEL', config.logLevel],
    ['RATE_LIMIT_PER_MINUTE', String(config.rateLimitPerMinute)],
    ['REDIS_URL', config.redisUrl === undefined ? '' : redactUrl(config.redisUrl)],
    ['CORS_ORIGINS', config.corsOrigins.join(',')],
    ['LOAD_SHED_EVENT_LOOP_DELAY_MS', String(config.loadShedEventLoopDelayMs)],
    ['HEADERS_TIMEOUT_MS', String(config.headersTimeoutMs)],
    ['REQUEST_TIMEOUT_MS', String(config.requestTimeoutMs)],
    ['KEEP_ALIVE_TIMEOUT_MS', String(config.keepAliveTimeoutMs)],
    ['MAX_CONNECTIONS', String(config.maxConnections)],
    ['METRICS_TOKEN', config.metricsToken === undefined ? '' : MASK],
    ['METRICS_ENABLED', String(config.metricsEnabled)],
    ['TRUST_PROXY', config.trustProxy.join(',')]
  ]
}

export const configCommand: Command = {
  usage: 'animal-store config [--json]',
  summary: 'Print the effective configuration (environment plus defaults), secrets masked.',
  run: async (args, context) => {
    const { values } = parseArgs({ args, options: { json: { type: 'boolean' } }, strict: true })
    const rows = describe(loadConfig(context.env))
    if (values.json === true) {
      context.stdout(JSON.stringify(Object.fromEntries(rows), null, 2))
      return 0
    }
    const width = Math.max(...rows.map(([name]) => name.length))
    for (const [name, value] of rows) {
      const source = context.env[name] === undefined || context.env[name] === '' ? '  (default)' : ''
      context.stdout(`${name.padEnd(width)}  ${value === '' ? '-' : value}${source}`)
    }
    return 0
  }
}
