import { test } from 'node:test'
import assert from 'node:assert/strict'
import { ConfigError, VARIABLES, describeConfig, loadConfig, postgresUrls, redactUrl } from './config.js'

test('loadConfig applies the documented defaults', () => {
  assert.deepEqual(loadConfig({}), {
    host: '0.0.0.0',
    port: 8080,
    webConcurrency: 1,
    storage: { engine: 'sqlite', path: './data/animal-store.sqlite' },
    databasePoolSize: 10,
    databaseReplicaUrls: [],
    replicaMaxLagMs: 5000,
    writeBatchSize: 256,
    writeBatchWaitMs: 5,
    sqliteSynchronous: 'full',
    publicBaseUrl: undefined,
    stagingBaseUrl: undefined,
    logLevel: 'info',
    logFormat: 'auto',
    rateLimitPerMinute: 0,
    sandboxRateLimitPerMinute: 1000,
    sandboxMaxPets: 10_000,
    redisUrl: undefined,
    corsOrigins: [],
    loadShedEventLoopDelayMs: 1000,
    headersTimeoutMs: 10_000,
    requestTimeoutMs: 30_000,
    keepAliveTimeoutMs: 72_000,
    maxConnections: 10_000,
    metricsToken: undefined,
    metricsEnabled: true,
    smtpUrl: undefined,
    mailFrom: 'Animal Store <no-reply@localhost>',
    mailGiveUpAfterMs: 86_400_000,
    passwordHashCost: 17,
    trustProxy: [],
    otelEndpoint: undefined,
    otelTracesEndpoint: undefined,
    otelServiceName: 'animal-store',
    otelTracesSampler: 'parentbased_always_on',
    otelTracesSamplerArg: undefined
  })
})

test('PASSWORD_HASH_COST is scrypt\'s log2 N from 12 to 20, OWASP\'s 17 by default; anything else is refused naming the bounds', () => {
  assert.equal(loadConfig({}).passwordHashCost, 17)
  assert.equal(loadConfig({ PASSWORD_HASH_COST: '12' }).passwordHashCost, 12)
  assert.equal(loadConfig({ PASSWORD_HASH_COST: '20' }).passwordHashCost, 20)
  for (const value of ['11', '21', '17.5', 'high', '-17']) {
    assert.throws(() => loadConfig({ PASSWORD_HASH_COST: value }), (error: unknown) => {
      assert.ok(error instanceof ConfigError)
      assert.deepEqual(error.problems, [`PASSWORD_HASH_COST="${value}" is invalid: expected an integer from 12 to 20`])
      return true
    })
  }
})

test('loadConfig reads the OpenTelemetry variables: collector URLs, sampler and ratio', () => {
  const config = loadConfig({ OTEL_EXPORTER_OTLP_ENDPOINT: 'http://collector:4318', OTEL_TRACES_SAMPLER: 'parentbased_traceidratio', OTEL_TRACES_SAMPLER_ARG: '0.1' })
  assert.equal(config.otelEndpoint, 'http://collector:4318')
  assert.equal(config.otelTracesSampler, 'parentbased_traceidratio')
  assert.equal(config.otelTracesSamplerArg, 0.1)
  assert.equal(loadConfig({ OTEL_TRACES_SAMPLER_ARG: '1' }).otelTracesSamplerArg, 1)
  assert.equal(loadConfig({ OTEL_TRACES_SAMPLER_ARG: '.25' }).otelTracesSamplerArg, 0.25)
  assert.throws(() => loadConfig({ OTEL_TRACES_SAMPLER_ARG: '1.5' }), /OTEL_TRACES_SAMPLER_ARG="1.5" is invalid: expected a number from 0 to 1/)
  assert.throws(() => loadConfig({ OTEL_EXPORTER_OTLP_TRACES_ENDPOINT: 'collector:4318' }), /OTEL_EXPORTER_OTLP_TRACES_ENDPOINT="collector:4318" is invalid: expected an absolute http\(s\) URL/)
  assert.throws(() => loadConfig({ OTEL_TRACES_SAMPLER: 'sometimes' }), /OTEL_TRACES_SAMPLER/)
})

test('loadConfig reads TRUST_PROXY as a list of addresses, CIDR ranges and proxy-addr range names', () => {
  assert.deepEqual(loadConfig({ TRUST_PROXY: '10.0.0.0/8, 127.0.0.1,::1, fd00::/8,loopback' }).trustProxy, ['10.0.0.0/8', '127.0.0.1', '::1', 'fd00::/8', 'loopback'])
  for (const bad of ['true', '10.0.0.0/33', '10.0.0.1/8/1', 'proxy.internal', '::1/129', '10.0.0.0/x']) {
    assert.throws(() => loadConfig({ TRUST_PROXY: bad }), (error: Error) => /TRUST_PROXY/.test(error.message), bad)
  }
})

test('loadConfig reads every variable', () => {
  const config = loadConfig({
    HOST: '127.0.0.1',
    PORT: '9000',
    DATABASE_URL: 'sqlite:/var/lib/animal-store/db.sqlite',
    PUBLIC_BASE_URL: 'https://api.example.com/v1/',
    STAGING_BASE_URL: 'https://staging.example.com/v1',
    LOG_LEVEL: 'warn',
    DATABASE_POOL_SIZE: '25'
  })
  assert.equal(config.databasePoolSize, 25)
  assert.equal(config.host, '127.0.0.1')
  assert.equal(config.port, 9000)
  assert.deepEqual(config.storage, { engine: 'sqlite', path: '/var/lib/animal-store/db.sqlite' })
  assert.equal(config.publicBaseUrl, 'https://api.example.com/v1')
  assert.equal(config.stagingBaseUrl, 'https://staging.example.com/v1')
  assert.equal(config.logLevel, 'warn')
  assert.ok(Object.isFrozen(config))
})

test('loadConfig reads the protection settings', () => {
  const config = loadConfig({
    RATE_LIMIT_PER_MINUTE: '600',
    REDIS_URL: 'redis://127.0.0.1:6379',
    CORS_ORIGINS: 'https://app.example.com, http://localhost:3000',
    LOAD_SHED_EVENT_LOOP_DELAY_MS: '0',
    HEADERS_TIMEOUT_MS: '2000',
    REQUEST_TIMEOUT_MS: '5000',
    KEEP_ALIVE_TIMEOUT_MS: '65000',
    MAX_CONNECTIONS: '100'
  })
  assert.equal(config.rateLimitPerMinute, 600)
  assert.equal(config.redisUrl, 'redis://127.0.0.1:6379')
  assert.deepEqual(config.corsOrigins, ['https://app.example.com', 'http://localhost:3000'])
  assert.equal(config.loadShedEventLoopDelayMs, 0)
  assert.equal(config.headersTimeoutMs, 2000)
  assert.equal(config.requestTimeoutMs, 5000)
  assert.equal(config.keepAliveTimeoutMs, 65000)
  assert.equal(config.maxConnections, 100)
  assert.throws(() => loadConfig({ CORS_ORIGINS: 'https://app.example.com/path' }), /CORS_ORIGINS/)
  assert.equal(loadConfig({ METRICS_TOKEN: 'a-long-enough-token' }).metricsToken, 'a-long-enough-token')
  assert.equal(loadConfig({ METRICS_ENABLED: 'false' }).metricsEnabled, false)
  assert.throws(() => loadConfig({ METRICS_ENABLED: 'maybe' }), /METRICS_ENABLED/)
  assert.throws(() => loadConfig({ METRICS_TOKEN: 'short' }), (error: Error) => /METRICS_TOKEN/.test(error.message) && !error.message.includes('short'))
  assert.throws(() => loadConfig({ REDIS_URL: 'http://x' }), /REDIS_URL/)
  assert.throws(() => loadConfig({ RATE_LIMIT_PER_MINUTE: '-1' }), /RATE_LIMIT_PER_MINUTE/)
})

test('loadConfig recognises PostgreSQL URLs', () => {
  assert.deepEqual(loadConfig({ DATABASE_URL: 'postgresql://u@h/db' }).storage, { engine: 'postgres', url: 'postgresql://u@h/db' })
  assert.deepEqual(loadConfig({ DATABASE_URL: 'postgres://u@h/db' }).storage, { engine: 'postgres', url: 'postgres://u@h/db' })
})

test('DATABASE_URL may list one PostgreSQL URL per host, and DATABASE_REPLICA_URLS the replicas', () => {
  const config = loadConfig({
    DATABASE_URL: 'postgres://app:a,b@db-1:5432/animals, postgresql://app:pw@db-2/animals?sslmode=require',
    DATABASE_REPLICA_URLS: 'postgres://app@db-3/animals,postgres://app@db-4/animals',
    REPLICA_MAX_LAG_MS: '250'
  })
  assert.ok(config.storage.engine === 'postgres')
  // A comma inside a URL (here in the password) does not split it.
  assert.deepEqual(postgresUrls(config.storage.url), ['postgres://app:a,b@db-1:5432/animals', 'postgresql://app:pw@db-2/animals?sslmode=require'])
  assert.deepEqual(config.databaseReplicaUrls, ['postgres://app@db-3/animals', 'postgres://app@db-4/animals'])
  assert.equal(config.replicaMaxLagMs, 250)
  assert.deepEqual(postgresUrls('postgres://u@h/db'), ['postgres://u@h/db'])

  assert.throws(() => loadConfig({ DATABASE_URL: 'postgres://db-1,db-2/animals' }), /one host per URL/)
  assert.throws(() => loadConfig({ DATABASE_URL: 'postgres://u:s3cret@db-1,db-2/a,postgres://u:s3cret@db-3/a' }),
    (error: Error) => /DATABASE_URL/.test(error.message) && !error.message.includes('s3cret'))
  assert.throws(() => loadConfig({ DATABASE_REPLICA_URLS: 'postgres://db-3/animals' }), /DATABASE_REPLICA_URLS.*PostgreSQL/)
  assert.throws(() => loadConfig({ DATABASE_URL: 'postgres://db-1/a', DATABASE_REPLICA_URLS: 'db-3' }), /DATABASE_REPLICA_URLS/)
  assert.throws(() => loadConfig({ REPLICA_MAX_LAG_MS: '-1' }), /REPLICA_MAX_LAG_MS/)
})

test('DATABASE_URL and DATABASE_REPLICA_URLS refuse an unparsable URL and a stray comma, naming the variable', () => {
  const refusals: Array<[Record<string, string>, RegExp]> = [
    [{ DATABASE_URL: 'postgres://db-1/animals,' }, /^DATABASE_URL="postgres:\/\/db-1\/animals," is invalid: a comma with no URL after it/],
    [{ DATABASE_URL: 'postgres://db-1/animals, ,postgres://db-2/animals' }, /^DATABASE_URL=.* is invalid: a comma with no URL after it/],
    [{ DATABASE_URL: 'postgres://u:s3cret@db-1:port/animals' }, /^DATABASE_URL=.* is invalid: "postgres:\/\/u:\*\*\*\*@db-1:port\/animals" is not a valid URL/],
    [{ DATABASE_URL: 'postgres://db-1/a', DATABASE_REPLICA_URLS: 'postgres://[db-3/animals' }, /^DATABASE_REPLICA_URLS=.* is invalid: .* is not a valid URL/],
    [{ DATABASE_URL: 'postgres://db-1/a', DATABASE_REPLICA_URLS: 'postgres://db-3:99999/animals' }, /^DATABASE_REPLICA_URLS=.* is invalid: .* is not a valid URL/],
    [{ DATABASE_URL: 'postgres://db-1/a', DATABASE_REPLICA_URLS: 'postgres://db-3/animals,' }, /^DATABASE_REPLICA_URLS=.* is invalid: a comma with no URL after it/]
  ]
  for (const [env, message] of refusals) {
    assert.throws(() => loadConfig(env), (error: unknown) => {
      assert.ok(error instanceof ConfigError)
      assert.equal(error.problems.length, 1, error.message)
      assert.match(error.problems[0] ?? '', message)
      assert.ok(!error.message.includes('s3cret'), 'no password')
      return true
    }, JSON.stringify(env))
  }
})

test('loadConfig names every bad variable and hides passwords', () => {
  assert.throws(
    () => loadConfig({ PORT: '80a', DATABASE_URL: 'mysql://u:secret@h/db', LOG_LEVEL: 'loud', PUBLIC_BASE_URL: 'ftp://x' }),
    (error: unknown) => {
      assert.ok(error instanceof ConfigError)
      assert.equal(error.problems.length, 4)
      assert.match(error.message, /PORT="80a"/)
      assert.match(error.message, /DATABASE_URL=/)
      assert.doesNotMatch(error.message, /secret/)
      assert.match(error.message, /LOG_LEVEL="loud"/)
      assert.match(error.message, /PUBLIC_BASE_URL/)
      return true
    }
  )
  assert.throws(() => loadConfig({ PORT: '70000' }), /PORT/)
  assert.throws(() => loadConfig({ DATABASE_POOL_SIZE: '0' }), /DATABASE_POOL_SIZE/)
  assert.equal(loadConfig({ WRITE_BATCH_SIZE: '1' }).writeBatchSize, 1)
  assert.throws(() => loadConfig({ WRITE_BATCH_SIZE: '0' }), /WRITE_BATCH_SIZE/)
  assert.equal(loadConfig({ WRITE_BATCH_WAIT_MS: '0' }).writeBatchWaitMs, 0)
  assert.equal(loadConfig({ DATABASE_URL: 'postgres://localhost/animals' }).writeBatchWaitMs, 0)
  assert.equal(loadConfig({ DATABASE_URL: 'postgres://localhost/animals', WRITE_BATCH_WAIT_MS: '3' }).writeBatchWaitMs, 3)
  assert.throws(() => loadConfig({ WRITE_BATCH_WAIT_MS: '1001' }), /WRITE_BATCH_WAIT_MS/)
  assert.equal(loadConfig({ SQLITE_SYNCHRONOUS: 'off' }).sqliteSynchronous, 'off')
  assert.throws(() => loadConfig({ SQLITE_SYNCHRONOUS: 'normal' }), /SQLITE_SYNCHRONOUS/)
  assert.equal(loadConfig({ WEB_CONCURRENCY: '64' }).webConcurrency, 64)
  assert.throws(() => loadConfig({ WEB_CONCURRENCY: '0' }), /WEB_CONCURRENCY/)
  assert.throws(() => loadConfig({ WEB_CONCURRENCY: '65' }), /WEB_CONCURRENCY/)
  assert.throws(() => loadConfig({ DATABASE_URL: 'sqlite:' }), /DATABASE_URL/)
})

test('redactUrl hides passwords in the authority and in the query', () => {
  assert.equal(redactUrl('postgres://app:s3cret@db:5432/x'), 'postgres://app:****@db:5432/x')
  assert.equal(redactUrl('postgres://db/x?user=app&password=s3cret&sslmode=require'), 'postgres://db/x?user=app&password=****&sslmode=require')
  assert.equal(redactUrl('sqlite:./data/x.sqlite'), 'sqlite:./data/x.sqlite')
  assert.equal(redactUrl('postgres://app:one@db-1/x,postgres://db-2/x?password=two,postgres://app:th,ree@db-3/x'),
    'postgres://app:****@db-1/x,postgres://db-2/x?password=****,postgres://app:****@db-3/x')
})

test('describeConfig lists every variable of the schema, in its order, masking what the schema marks secret', () => {
  const config = loadConfig({
    DATABASE_URL: 'postgres://app:s3cret@db-1/animals',
    DATABASE_REPLICA_URLS: 'postgres://app:s3cret@db-2/animals',
    REDIS_URL: 'redis://:s3cret@cache:6379',
    METRICS_TOKEN: 's3cret-0123456789abcdef'
  })
  const rows = describeConfig(config)
  assert.deepEqual(rows.map(([name]) => name), VARIABLES.map(([, schema]) => schema.env))
  assert.ok(!JSON.stringify(rows).includes('s3cret'), JSON.stringify(rows))
  const shown = Object.fromEntries(rows)
  assert.equal(shown.DATABASE_URL, 'postgres://app:****@db-1/animals')
  assert.equal(shown.DATABASE_REPLICA_URLS, 'postgres://app:****@db-2/animals')
  assert.equal(shown.METRICS_TOKEN, '****')
  assert.equal(Object.fromEntries(describeConfig(loadConfig({}))).METRICS_TOKEN, '')
  for (const [, schema] of VARIABLES.filter(([, schema]) => schema.secret === undefined)) assert.doesNotMatch(shown[schema.env] ?? '', /\*\*\*\*/)
})
