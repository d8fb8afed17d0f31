import { describe, test } from 'node:test'
import assert from 'node:assert/strict'
import { get } from 'node:http'
import { Metrics } from '../../src/services/metrics.js'
import { sumOfWorkers } from '../../src/services/cluster-metrics.js'
import { METRICS_AUTH, tempDir } from '../helpers/build-app.js'
import { dbFile, launchServer, seedApiKey } from '../helpers/server-process.js'

const REQUESTS = 40

/** A GET on a connection of its own, so that the cluster hands it to the next worker in turn. */
async function getOnNewConnection (url: string, headers: Record<string, string>): Promise<{ status: number, body: string }> {
  return new Promise((resolve, reject) => {
    get(url, { agent: false, headers }, (response) => {
      let body = ''
      response.setEncoding('utf8').on('data', (chunk: string) => { body += chunk })
      response.once('end', () => resolve({ status: response.statusCode ?? 0, body }))
    }).once('error', reject)
  })
}

/** The value of the series written exactly so (name and labels), or undefined. */
function valueOf (text: string, series: string): number | undefined {
  const line = text.split('\n').find((each) => each.startsWith(`${series} `))
  return line === undefined ? undefined : Number(line.slice(series.length + 1))
}

describe('metrics of a cluster', () => {
  test('the sum of two workers\' registries adds counters and histograms, and keeps each worker\'s gauges apart', async () => {
    const [first, second] = [new Metrics(), new Metrics()]
    first.requests.record(0.002, 'GET', '/v1/pets', '200', 'live')
    second.requests.record(0.3, 'GET', '/v1/pets', '200', 'live')
    second.requests.record(0.004, 'GET', '/v1/pets', '200', 'live')
    first.inFlightRequests = 2
    second.inFlightRequests = 5
    const text = await sumOfWorkers([
      { worker: '1', metrics: await first.registry.getMetricsAsJSON() },
      { worker: '2', metrics: await second.registry.getMetricsAsJSON() }
    ] as Parameters<typeof sumOfWorkers>[0])
    assert.equal(valueOf(text, 'http_requests_total{method="GET",route="/v1/pets",status="200",mode="live"}'), 3)
    assert.equal(valueOf(text, 'http_request_duration_seconds_count{method="GET",route="/v1/pets",status="200",mode="live"}'), 3)
    assert.equal(valueOf(text, 'http_request_duration_seconds_bucket{le="0.005",method="GET",route="/v1/pets",status="200",mode="live"}'), 2)
    assert.equal(valueOf(text, 'http_request_duration_seconds_bucket{le="+Inf",method="GET",route="/v1/pets",status="200",mode="live"}'), 3)
    assert.ok(Math.abs((valueOf(text, 'http_request_duration_seconds_sum{method="GET",route="/v1/pets",status="200",mode="live"}') ?? 0) - 0.306) < 1e-9)
    assert.equal(valueOf(text, 'http_requests_in_flight{worker="1"}'), 2)
    assert.equal(valueOf(text, 'http_requests_in_flight{worker="2"}'), 5)
    // The process's own gauges too: one series per worker.
    assert.match(text, /^process_start_time_seconds\{worker="1"\} \d+/m)
    assert.match(text, /^process_start_time_seconds\{worker="2"\} \d+/m)
  })

  test(`WEB_CONCURRENCY=2: ${REQUESTS} requests answered by both workers, and any one scrape reports ${REQUESTS}`, { timeout: 60_000 }, async (t) => {
    const dir = tempDir(t)
    const key = await seedApiKey(dbFile(dir))
    const server = launchServer(t, { DATABASE_URL: `sqlite:${dbFile(dir)}`, WEB_CONCURRENCY: '2', LOG_LEVEL: 'info' })
    const baseUrl = await server.listening
    const started = await server.waitForLog((entry) => entry.msg === 'worker started')
    const startedToo = await server.waitForLog((entry) => entry.msg === 'worker started' && entry.worker !== started.worker)
    const first = await server.waitForLog((entry) => typeof entry.msg === 'string' && entry.msg.startsWith('Animal Store listening on '))
    await server.waitForLog((entry) => typeof entry.msg === 'string' && entry.msg.startsWith('Animal Store listening on ') && entry.pid !== first.pid)

    const auth = { authorization: `Bearer ${key}` }
    for (let i = 0; i < REQUESTS; i++) {
      const answer = await getOnNewConnection(`${baseUrl}/v1/pets?limit=1`, auth)
      assert.equal(answer.status, 200, answer.body)
    }
    // Both workers answered some of them: each writes the access lines of its own.
    for (const worker of [started, startedToo]) {
      await server.waitForLog((entry) => entry.msg === 'request completed' && entry.url === '/v1/pets?limit=1' && entry.pid === worker.workerPid)
    }

    const refused = await getOnNewConnection(`${baseUrl}/metrics`, {})
    assert.equal(refused.status, 401, 'the token still applies')
    // Scrapes on connections of their own reach one worker, then the other: each reports every worker's requests.
    for (let scrape = 0; scrape < 2; scrape++) {
      const { status, body } = await getOnNewConnection(`${baseUrl}/metrics`, METRICS_AUTH)
      assert.equal(status, 200, body)
      assert.equal(valueOf(body, 'http_requests_total{method="GET",route="/v1/pets",status="200",mode="live"}'), REQUESTS, body)
      assert.equal(valueOf(body, 'http_request_duration_seconds_count{method="GET",route="/v1/pets",status="200",mode="live"}'), REQUESTS)
      assert.equal(valueOf(body, 'http_request_duration_seconds_bucket{le="+Inf",method="GET",route="/v1/pets",status="200",mode="live"}'), REQUESTS)
      for (const worker of [started, startedToo]) {
        assert.notEqual(valueOf(body, `http_requests_in_flight{worker="${String(worker.worker)}"}`), undefined, `worker ${String(worker.worker)}'s gauge: ${body}`)
      }
    }
    // The scrapes were answered by both workers.
    for (const worker of [started, startedToo]) {
      await server.waitForLog((entry) => entry.msg === 'request completed' && entry.url === '/metrics' && entry.statusCode === 200 && entry.pid === worker.workerPid)
    }
  })
})
