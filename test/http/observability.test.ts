import { describe, test } from 'node:test'
import assert from 'node:assert/strict'
import { pino } from 'pino'
import { loadConfig } from '../../src/config.js'
import { buildTestApp, createTestKey, METRICS_AUTH, openTestStore, TEST_DEFAULTS, TEST_ENGINE, buildServedApp } from '../helpers/build-app.js'
import { logLineSink } from '../helpers/log-lines.js'

describe('metrics', () => {
  test('GET /metrics counts requests by route template and status, key-cache lookups, storage calls and the process', async (t) => {
    const { app, auth } = await buildTestApp(t)
    await app.inject({ url: '/v1/pets?limit=5', headers: auth })
    await app.inject({ url: '/v1/pets/12345', headers: auth })
    await app.inject({ url: '/v1/pets' })
    const response = await app.inject({ url: '/metrics', headers: METRICS_AUTH })
    assert.equal(response.statusCode, 200)
    assert.match(String(response.headers['content-type']), /^text\/plain/)
    const text = response.body
    assert.match(text, /http_requests_total\{method="GET",route="\/v1\/pets",status="200"\} 1/)
    assert.match(text, /http_requests_total\{method="GET",route="\/v1\/pets\/:petId",status="404"\} 1/)
    assert.match(text, /http_requests_total\{method="GET",route="\/v1\/pets",status="401"\} 1/)
    assert.match(text, /http_request_duration_seconds_bucket\{le="0\.005",method="GET",route="\/v1\/pets",status="200"\}/)
    assert.match(text, /http_requests_in_flight 1/, 'the scrape itself is in flight')
    assert.match(text, /api_key_cache_lookups_total\{result="miss"\} 1/)
    assert.match(text, /api_key_cache_lookups_total\{result="hit"\} 1/)
    assert.match(text, /db_query_duration_seconds_count\{operation="pets\.listPage"\} 1/)
    assert.match(text, /process_cpu_user_seconds_total/)
    assert.match(text, /nodejs_eventloop_lag_seconds/)
    assert.doesNotMatch(text, /ask_/, 'no key material in metrics')
  })

  test('GET /metrics counts the transactions that committed creates and, on SQLite, the syncs that acknowledged them', async (t) => {
    const { app, auth } = await buildTestApp(t)
    const created = await Promise.all(Array.from({ length: 3 }, async () =>
      await app.inject({ method: 'POST', url: '/v1/pets', headers: auth, payload: { name: 'Rex', categoryId: 1 } })))
    assert.deepEqual(created.map((response) => response.statusCode), [201, 201, 201])
    const text = (await app.inject({ url: '/metrics', headers: METRICS_AUTH })).body
    const commits = Number(/^db_pet_commits_total (\d+)$/m.exec(text)?.[1])
    assert.ok(commits >= 1 && commits <= 3, `commits: ${commits}`)
    if (TEST_ENGINE === 'sqlite') {
      const syncs = Number(/^db_wal_syncs_total (\d+)$/m.exec(text)?.[1])
      assert.ok(syncs >= 1 && syncs <= commits, `syncs: ${syncs}`)
    } else {
      assert.doesNotMatch(text, /db_wal_syncs_total/)
    }
  })

  test('METRICS_TOKEN protects /metrics', async (t) => {
    const { app } = await buildTestApp(t, { METRICS_TOKEN: 'scrape-token-0123456789' })
    assert.equal((await app.inject({ url: '/metrics' })).statusCode, 401)
    const wrong = await app.inject({ url: '/metrics', headers: { authorization: 'Bearer scrape-token-0123456780' } })
    assert.equal(wrong.statusCode, 401)
    assert.deepEqual(Object.keys(wrong.json()).sort(), ['code', 'message', 'status'])
    assert.equal((await app.inject({ url: '/metrics', headers: { authorization: 'Bearer scrape-token-0123456789' } })).statusCode, 200)
  })

  test('is not part of the API document', async (t) => {
    const { app } = await buildTestApp(t)
    const doc = (await app.inject({ url: '/v1/openapi.json' })).json<{ paths: Record<string, unknown> }>()
    assert.equal(JSON.stringify(doc.paths).includes('metrics'), false)
  })
})

describe('the access log', () => {
  test('a request\'s line is one the logger itself would write: its level, time and bindings (a worker\'s too), then the request\'s fields', async (t) => {
    const { sink, lines } = logLineSink()
    const { store } = await openTestStore(t)
    const key = await createTestKey(store)
    // A cluster worker's logger is a child bound to its id (src/cluster.ts): the access line carries the binding as every other line does.
    const logger = pino({ level: 'info' }, sink).child({ worker: 7 })
    const app = await buildServedApp({ config: loadConfig(TEST_DEFAULTS), store, logger })
    t.after(() => app.close())
    const before = Date.now()
    await app.inject({ url: '/v1/pets?limit=5', headers: { authorization: `Bearer ${key}`, 'x-request-id': 'req-shape' } })
    logger.info({ requestId: 'req-other' }, 'a line of pino\'s own')
    const line = lines.find((entry) => entry.requestId === 'req-shape')
    const own = lines.find((entry) => entry.requestId === 'req-other')
    assert.ok(line !== undefined && own !== undefined, JSON.stringify(lines))
    assert.deepEqual(Object.keys(line), ['level', 'time', 'pid', 'hostname', 'worker', 'requestId', 'method', 'url', 'statusCode', 'ms', 'msg'])
    assert.deepEqual(Object.keys(own).slice(0, 5), Object.keys(line).slice(0, 5), 'the same head as pino\'s own lines')
    assert.equal(line.level, 30)
    assert.equal(line.pid, own.pid)
    assert.equal(line.hostname, own.hostname)
    assert.equal(line.worker, 7)
    assert.ok(typeof line.time === 'number' && line.time >= before && line.time <= Date.now(), String(line.time))
    assert.equal(line.url, '/v1/pets?limit=5')
    assert.equal(line.statusCode, 200)
    assert.ok(typeof line.ms === 'number' && line.ms >= 0)
    assert.equal(line.ms, Math.round(line.ms * 100) / 100, 'rounded to hundredths')
    assert.equal(line.msg, 'request completed')
  })
})

describe('trace context', () => {
  test('a valid traceparent puts the trace id on every log line of the request; an invalid one is ignored', async (t) => {
    const { sink, lines } = logLineSink()
    const { store } = await openTestStore(t)
    const key = await createTestKey(store)
    const app = await buildServedApp({ config: loadConfig(TEST_DEFAULTS), store, logger: pino({ level: 'info' }, sink) })
    t.after(() => app.close())
    const traced = await app.inject({
      url: '/v1/pets',
      headers: { authorization: `Bearer ${key}`, traceparent: '00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01', 'x-request-id': 'req-traced' }
    })
    assert.equal(traced.headers['x-request-id'], 'req-traced')
    await app.inject({ url: '/v1/pets', headers: { authorization: `Bearer ${key}`, traceparent: 'garbage', 'x-request-id': 'req-untraced' } })
    const tracedLines = lines.filter((line) => line.requestId === 'req-traced')
    assert.ok(tracedLines.length > 0)
    for (const line of tracedLines) {
      assert.equal(line.traceId, '4bf92f3577b34da6a3ce929d0e0e4736')
      assert.equal(line.parentSpanId, '00f067aa0ba902b7')
      assert.match(String(line.spanId), /^[0-9a-f]{16}$/)
    }
    const untraced = lines.filter((line) => line.requestId === 'req-untraced')
    assert.ok(untraced.length > 0)
    assert.ok(untraced.every((line) => line.traceId === undefined))
  })
})

describe('GET /metrics against abuse', () => {
  test('is not served without METRICS_TOKEN: 404, as for any unknown path', async (t) => {
    const { app } = await buildTestApp(t, { METRICS_TOKEN: '' })
    const response = await app.inject({ url: '/metrics', headers: METRICS_AUTH })
    assert.equal(response.statusCode, 404, response.body)
    assert.equal(response.json<{ code: string }>().code, 'not_found')
  })

  test('counts methods outside the API\'s own set as other and unknown paths as one route, so odd requests add no series', async (t) => {
    const { app, auth } = await buildTestApp(t)
    const odd = ['PROPFIND', 'MKCOL', 'LOCK', 'UNLOCK', 'SEARCH', 'PURGE', 'REPORT', 'ACL']
    for (const method of odd) {
      await app.inject({ method: method as 'GET', url: '/v1/pets', headers: auth })
      await app.inject({ method: method as 'GET', url: `/v1/nope-${method}`, headers: auth })
    }
    for (let i = 0; i < 20; i++) await app.inject({ url: `/unknown/path/${i}`, headers: auth })
    const text = (await app.inject({ url: '/metrics', headers: METRICS_AUTH })).body
    const series = text.split('\n').filter((line) => line.startsWith('http_requests_total{'))
    assert.ok(series.every((line) => /method="(GET|HEAD|POST|OPTIONS|PUT|PATCH|DELETE|other)"/.test(line)), series.join('\n'))
    assert.match(text, /http_requests_total\{method="other",route="\/v1\/pets",status="405"\} 8/)
    assert.match(text, /http_requests_total\{method="other",route="unmatched",status="404"\} 8/)
    assert.match(text, /http_requests_total\{method="GET",route="unmatched",status="404"\} 20/)
    assert.ok(series.length <= 4, series.join('\n'))
  })

  test('renders at most once a second: a flood of scrapes within a second gets one text', async (t) => {
    const { app, auth } = await buildTestApp(t)
    const started = Date.now()
    const first = (await app.inject({ url: '/metrics', headers: METRICS_AUTH })).body
    await app.inject({ url: '/v1/pets', headers: auth })
    const again = await Promise.all(Array.from({ length: 20 }, async () => (await app.inject({ url: '/metrics', headers: METRICS_AUTH })).body))
    // Only within the second after the first scrape is the text the same; a slower machine may get past it.
    if (Date.now() - started < 900) for (const text of again) assert.equal(text, first)
    else t.diagnostic('the scrapes took longer than the cache holds; not compared')
  })
})
