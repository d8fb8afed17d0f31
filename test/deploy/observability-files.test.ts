import { readFileSync } from 'node:fs'
import { join } from 'node:path'
import { describe, test, type TestContext } from 'node:test'
import assert from 'node:assert/strict'
import { parse } from 'yaml'
import { METRICS_AUTH, tempDir } from '../helpers/build-app.js'
import { createTestSchema, postgresAvailable } from '../helpers/postgres.js'
import { dbFile, launchServer } from '../helpers/server-process.js'

const root = join(import.meta.dirname, '..', '..')
const read = (file: string): string => readFileSync(join(root, file), 'utf8')

/** Metrics the rules name before the feature that exports them has landed. */
const PENDING_INTEGRATION = new Set<string>()
/** Metrics only a PostgreSQL store exports: its pool, its primary and its replicas. */
const POSTGRES_ONLY = new Set(['db_pool_connections', 'db_primary', 'db_replica_lag_seconds', 'db_replica_in_use', 'db_replica_reads_total'])

/** Words of PromQL that are no metric: operators, modifiers and the functions' names (followed by a parenthesis). */
const KEYWORDS = new Set(['by', 'without', 'on', 'ignoring', 'group_left', 'group_right', 'bool', 'and', 'or', 'unless', 'offset'])

/** The metric names a PromQL expression reads. */
function metricsOf (expr: string): string[] {
  const bare = expr
    .replace(/"(?:[^"\\]|\\.)*"/g, '""')
    .replace(/\{[^}]*\}/g, ' ')
    .replace(/\[[^\]]*\]/g, ' ')
    .replace(/\b(?:by|without|on|ignoring|group_left|group_right)\s*\([^)]*\)/g, ' ')
    .replace(/\$\w+/g, ' ')
  const names = [...bare.matchAll(/([A-Za-z_:][A-Za-z0-9_:]*)(\s*\()?/g)]
    .filter((match) => match[2] === undefined && !KEYWORDS.has(match[1] ?? ''))
    .map((match) => match[1] ?? '')
  return [...new Set(names)]
}

/** Every string under an `expr` key, however deep. */
function exprsOf (value: unknown): string[] {
  if (Array.isArray(value)) return value.flatMap(exprsOf)
  if (typeof value !== 'object' || value === null) return []
  return Object.entries(value).flatMap(([key, inner]) => key === 'expr' && typeof inner === 'string' ? [inner] : exprsOf(inner))
}

interface Rule { alert: string, expr: string, for: string, labels: { severity: string }, annotations: { summary: string, description: string } }
const dashboard = JSON.parse(read('deploy/grafana/animal-store.json')) as { uid: string, panels: Array<{ title: string, type: string }> }
const rules = (parse(read('deploy/prometheus/alerts.yaml')) as { groups: Array<{ name: string, rules: Rule[] }> }).groups.flatMap((group) => group.rules)
const named = new Set([...exprsOf(dashboard), ...rules.map((rule) => rule.expr)].flatMap(metricsOf))

/** Whether a scrape exports the metric: its own `# TYPE`, or its histogram's for a `_bucket`, `_sum` or `_count` series. */
function exports (scrape: string, name: string): boolean {
  if (new RegExp(`^# TYPE ${name} `, 'm').test(scrape)) return true
  const histogram = /^(.+)_(?:bucket|sum|count)$/.exec(name)?.[1]
  return histogram !== undefined && new RegExp(`^# TYPE ${histogram} histogram$`, 'm').test(scrape)
}

async function scrapeOfServer (t: TestContext, databaseUrl: string): Promise<string> {
  // Rate limiting on (its gauge), with a Redis that does not answer: the gauge is there either way.
  const server = launchServer(t, { DATABASE_URL: databaseUrl, RATE_LIMIT_PER_MINUTE: '100', REDIS_URL: 'redis://127.0.0.1:1' })
  const baseUrl = await server.listening
  const response = await fetch(`${baseUrl}/metrics`, { headers: METRICS_AUTH })
  assert.equal(response.status, 200)
  return await response.text()
}

function assertExported (scrape: string, skip: ReadonlySet<string>): void {
  const missing = [...named].filter((name) => !skip.has(name) && !PENDING_INTEGRATION.has(name) && !exports(scrape, name))
  assert.deepEqual(missing, [], 'every metric the dashboard and the alert rules name is exported')
  for (const name of PENDING_INTEGRATION) assert.ok(!exports(scrape, name), `${name} is exported now: take it off PENDING_INTEGRATION`)
}

describe('dashboard and alert rules', () => {
  test('the expressions are read as the metrics they name', () => {
    assert.deepEqual(metricsOf('sum by (route, le) (rate(http_request_duration_seconds_bucket{job=~"$job",status=~"5.."}[$__rate_interval]))'), ['http_request_duration_seconds_bucket'])
    assert.deepEqual(metricsOf('count by (job) (db_pool_connections{state="total"}) unless count by (job) (db_primary == 1)'), ['db_pool_connections', 'db_primary'])
  })

  test('the dashboard has panels for rate, errors, latency per route, shedding, rate limit, replicas and the key cache', () => {
    assert.equal(dashboard.uid, 'animal-store')
    const titles = dashboard.panels.filter((panel) => panel.type !== 'row').map((panel) => panel.title.toLowerCase())
    for (const topic of ['request rate by route', 'errors', 'latency p99 by route', 'load shedding', 'rate limit', 'replica lag', 'api key cache hit rate']) {
      assert.ok(titles.includes(topic), `a panel "${topic}": ${titles.join(', ')}`)
    }
  })

  test('the alert rules cover 5xx rate, no primary, replica lag, shedding and the mail outbox\'s backlog, each complete', () => {
    for (const rule of rules) {
      assert.match(rule.alert, /^AnimalStore[A-Z]\w+$/)
      assert.match(rule.for, /^\d+[smh]$/, rule.alert)
      assert.ok(['page', 'ticket'].includes(rule.labels.severity), rule.alert)
      assert.ok(rule.annotations.summary.length > 0 && rule.annotations.description.length > 0, rule.alert)
    }
    const reads = (metric: string): string[] => rules.filter((rule) => metricsOf(rule.expr).includes(metric)).map((rule) => rule.alert)
    assert.deepEqual(reads('http_requests_total'), ['AnimalStoreHigh5xxRate'])
    assert.deepEqual(reads('db_primary'), ['AnimalStoreNoPrimary'])
    assert.deepEqual(reads('db_replica_lag_seconds'), ['AnimalStoreReplicaLagging'])
    assert.deepEqual(reads('http_requests_shed_total'), ['AnimalStoreShedding'])
    assert.deepEqual(reads('mail_outbox_pending'), ['AnimalStoreMailOutboxBacklog'])
  })

  test('a real server on SQLite exports every metric they name, but PostgreSQL\'s own', { timeout: 30_000 }, async (t) => {
    assertExported(await scrapeOfServer(t, `sqlite:${dbFile(tempDir(t))}`), POSTGRES_ONLY)
  })

  test('a real server on PostgreSQL exports every metric they name', { timeout: 30_000 }, async (t) => {
    if (!await postgresAvailable()) return t.skip('PostgreSQL is not reachable')
    assertExported(await scrapeOfServer(t, await createTestSchema(t)), new Set())
  })
})
