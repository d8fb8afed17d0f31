import { test } from 'node:test'
import assert from 'node:assert/strict'
import { Registry } from 'prom-client'
import { LabelledDurations } from './labelled-durations.js'

test('durations are exposed as a Prometheus counter and a cumulative histogram', async () => {
  const registry = new Registry()
  const stats = new LabelledDurations(['method', 'route', 'status'], [0.01, 0.1])
  stats.registerIn(registry, { name: 'request_seconds', help: 'Latency.' }, { name: 'requests_total', help: 'Requests.' })
  stats.record(0.005, 'GET', '/v1/pets', '200')
  stats.record(0.05, 'GET', '/v1/pets', '200')
  stats.record(0.5, 'GET', '/v1/pets', '200')
  stats.record(0.01, 'POST', '/v1/pets', '201')

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

test('a histogram alone, by one label', async () => {
  const registry = new Registry()
  const durations = new LabelledDurations(['operation'], [0.001])
  durations.registerIn(registry, { name: 'db_seconds', help: 'Storage calls.' })
  durations.record(0.0005, 'pets.insert')
  durations.record(0.002, 'pets.insert')
  const text = await registry.metrics()
  assert.match(text, /db_seconds_bucket\{le="0.001",operation="pets.insert"\} 1\n/)
  assert.match(text, /db_seconds_count\{operation="pets.insert"\} 2\n/)
  assert.deepEqual((await registry.getMetricsAsJSON()).map((metric) => metric.name), ['db_seconds'])
})
