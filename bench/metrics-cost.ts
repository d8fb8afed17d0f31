/**
 * npm run bench:metrics: what counting one request costs, measured in isolation (no network,
 * so none of the shared machine's noise): LabelledDurations.record() as the pipeline's metrics step calls it,
 * against the time one cached read takes end to end (1 / requests per second in the last
 * `npm run bench`).
 */
import { Metrics } from '../src/services/metrics.js'

const ROUTES = ['/v1/pets', '/v1/pets/:petId'] as const
const N = 2_000_000

function measure (work: (i: number) => void): number {
  for (let i = 0; i < 200_000; i++) work(i)
  const started = process.hrtime.bigint()
  for (let i = 0; i < N; i++) work(i)
  return Number(process.hrtime.bigint() - started) / N
}

const metrics = new Metrics()
const perRequest = measure((i) => {
  const started = performance.now()
  metrics.inFlightRequests++
  metrics.inFlightRequests--
  metrics.requests.record((performance.now() - started) / 1000, 'GET', ROUTES[i & 1] ?? '/v1/pets', '200')
})
const clock = measure(() => { performance.now() })
console.log(`counting one request: ${perRequest.toFixed(0)} ns (of which ${(2 * clock).toFixed(0)} ns reading the clock twice, which the access log needs anyway)`)
const text = await metrics.registry.metrics()
console.log(`one scrape: ${text.length} bytes`)
