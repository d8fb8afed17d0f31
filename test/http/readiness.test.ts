import { describe, test } from 'node:test'
import assert from 'node:assert/strict'
import { pino } from 'pino'
import { appServices, serverOf } from '../../src/app.js'
import { loadConfig } from '../../src/config.js'
import { pipeline } from '../../src/http/pipeline.js'
import { buildTestApp, openTestStore, TEST_DEFAULTS, TEST_ENGINE } from '../helpers/build-app.js'
import { REDIS_URL, redisAvailable } from '../helpers/redis.js'

interface Readiness {
  status: string
  database: { state: string, engine: string, primary?: string, timeline?: number, hosts?: Array<{ host: string, role: string }> }
  replicas?: Array<{ host: string, state: string, lagMs?: number }>
  redis?: { state: string, for: string }
  mailOutbox?: { state: string, pending: number }
}

describe('readiness', () => {
  test('GET /readyz names the database and the mail outbox with their states; nothing else is named when nothing else is used', async (t) => {
    const { app } = await buildTestApp(t)
    const response = await app.inject({ url: '/readyz' })
    assert.equal(response.statusCode, 200, response.body)
    assert.match(String(response.headers['content-type']), /^application\/json/)
    const body = response.json<Readiness>()
    assert.equal(body.status, 'ready')
    assert.equal(body.database.state, 'up')
    assert.equal(body.database.engine, TEST_ENGINE)
    assert.equal(body.redis, undefined)
    assert.equal(body.mailOutbox?.state, 'up', 'the mail outbox')
    assert.equal(typeof body.mailOutbox.pending, 'number', 'and its backlog')
    if (TEST_ENGINE === 'postgres') {
      // One host, no replica: it takes the writes.
      assert.equal(typeof body.database.primary, 'string')
      assert.equal(body.database.hosts?.[0]?.role, 'primary')
      assert.deepEqual(body.replicas, [])
    } else {
      assert.deepEqual(Object.keys(body).sort(), ['database', 'mailOutbox', 'status'])
    }
  })

  test('a shared rate limit\'s Redis that does not answer is named down, and the service stays ready', async (t) => {
    // Port 1: nothing listens there, so the connection is refused at once.
    const { app } = await buildTestApp(t, { RATE_LIMIT_PER_MINUTE: '100', REDIS_URL: 'redis://127.0.0.1:1' })
    const response = await app.inject({ url: '/readyz' })
    assert.equal(response.statusCode, 200, response.body)
    const body = response.json<Readiness>()
    assert.equal(body.status, 'ready')
    assert.deepEqual(body.redis, { state: 'down', for: 'rate limits' })
  })

  test('a shared rate limit\'s Redis that answers is named up', async (t) => {
    if (!await redisAvailable()) return t.skip(`Redis at ${REDIS_URL} does not answer`)
    const { app } = await buildTestApp(t, { RATE_LIMIT_PER_MINUTE: '100', REDIS_URL })
    const body = (await app.inject({ url: '/readyz' })).json<Readiness>()
    assert.deepEqual(body.redis, { state: 'up', for: 'rate limits' })
  })

  test('another dependency is one more entry: named with its state, `unknown` when it cannot say, and readiness holds', async (t) => {
    const { store } = await openTestStore(t)
    const services = await appServices({ config: loadConfig({ ...TEST_DEFAULTS }), store, logger: pino({ level: 'silent' }) })
    services.readiness.report('mailOutbox', async () => ({ state: 'up', pending: 3 }))
    services.readiness.report('broken', () => { throw new Error('no state') })
    const app = await serverOf(services, pipeline(services.pipelineDeps))
    t.after(() => app.close())
    const response = await app.inject({ url: '/readyz' })
    assert.equal(response.statusCode, 200, response.body)
    const body = response.json<Record<string, unknown>>()
    assert.deepEqual(body.mailOutbox, { state: 'up', pending: 3 })
    assert.deepEqual(body.broken, { state: 'unknown' })
  })
})
