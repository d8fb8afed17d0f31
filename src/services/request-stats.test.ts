import { test } from 'node:test'
import assert from 'node:assert/strict'
import { Registry } from 'prom-client'
import { RequestStats } from './request-stats.js'

test('request stats are exposed as a Prometheus counter and a cumulative histogram', async () => {
  const registry = new Registry()
  const stats = new RequestStats([0.01, 0.1])
  stats.registerIn(registry, { counter: 'requests_total', histogram: 'request_seconds' }, { counter: 'Requests.', histogram: 'Latency.' })
  stats.record('GET', '/v1/pets', 200, 0.005)
  stats.record('GET', '/v1/pets', 200, 0.05)
  stats.record('GET', '/v1/pets', 200, 0.5)
  stats.record('POST', '/v1/pets', 201, 0.01)

  const text = await registry.metrics()
  assert.match(text, /# TYPE requests_total counter/)
  assert.match(text, /requests_total\{method="GET",route="\/v1\/pets",status="200"\} 3\n/)
  assert.match(text, /requests_total\{method="POST",route="\/v1\/pets",status="201"\} 1\n/)
  assert.match(text, /# TYPE request_seconds histogram/)
  assert.match(text, /request_seconds_bucket\{le="0.01",method="GET",route="\/v1\/pets",status="200"\} 1\n/)
  assert.match(text, /request_seconds_bucket\{le="0.1",method="GET",route="\/v1\/pets",status="200"\} 2\n/)
  assert.match(text, /request_seconds_bucket\{le="\+Inf",method="GET",route="\/v1\/pets",status="200"\} 3\n/)
  assert.match(text, /request_seconds_sum\{method="GET",route="\/v1\/pets",status="200"\} 0.555\n/)
  assert.match(text, /request_seconds_count\{method="GET",route="\/v1\/pets",status="200"\} 3\n/)
  assert.match(text, /request_seconds_bucket\{le="0.01",method="POST",route="\/v1\/pets",status="201"\} 1\n/, 'a bound is inclusive')

  const json = await registry.getMetricsAsJSON()
  assert.deepEqual(json.map((metric) => metric.name).sort(), ['request_seconds', 'requests_total'])
})
