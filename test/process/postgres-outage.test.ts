import { createServer, type Server, type Socket, connect } from 'node:net'
import { once } from 'node:events'
import { describe, test } from 'node:test'
import assert from 'node:assert/strict'
import { pino } from 'pino'
import { loadConfig } from '../../src/config.js'
import { openPostgresStore } from '../../src/storage/postgres/postgres-store.js'
import { createTestKey, TEST_DEFAULTS, buildServedApp } from '../helpers/build-app.js'
import { createTestSchema, POSTGRES_URL, postgresAvailable } from '../helpers/postgres.js'

/** A TCP relay to PostgreSQL that the test can cut and restore, standing in for a database outage. */
class Relay {
  private server: Server | undefined
  private readonly sockets = new Set<Socket>()
  port = 0

  async start (): Promise<void> {
    const target = new URL(POSTGRES_URL)
    this.server = createServer((client) => {
      const upstream = connect(Number(target.port || 5432), target.hostname)
      for (const socket of [client, upstream]) {
        this.sockets.add(socket)
        socket.once('close', () => this.sockets.delete(socket))
        socket.on('error', () => {})
      }
      client.pipe(upstream).pipe(client)
    })
    this.server.listen(this.port, '127.0.0.1')
    await once(this.server, 'listening')
    const address = this.server.address()
    if (address !== null && typeof address === 'object') this.port = address.port
  }

  async stop (): Promise<void> {
    for (const socket of this.sockets) socket.destroy()
    const server = this.server
    if (server === undefined) return
    await new Promise((resolve) => server.close(resolve))
  }
}

describe('PostgreSQL outage', () => {
  test('readiness and requests answer 503 within a bounded time while the database is away, and recover without a restart', { timeout: 60_000 }, async (t) => {
    if (!await postgresAvailable()) {
      t.skip('PostgreSQL is not reachable')
      return
    }
    const direct = await createTestSchema(t)
    const relay = new Relay()
    await relay.start()
    t.after(() => relay.stop())
    const viaRelay = new URL(direct)
    viaRelay.host = `127.0.0.1:${relay.port}`

    const store = openPostgresStore(viaRelay.toString(), { poolSize: 4, onError: () => {} })
    t.after(() => store.close())
    await store.migrate()
    const app = await buildServedApp({ config: loadConfig(TEST_DEFAULTS), store, logger: pino({ level: 'silent' }) })
    t.after(() => app.close())
    const auth = { authorization: `Bearer ${await createTestKey(store)}` }

    assert.equal((await app.inject({ url: '/readyz' })).statusCode, 200)
    assert.equal((await app.inject({ url: '/v1/pets', headers: auth })).statusCode, 200)

    await relay.stop()
    const started = Date.now()
    const ready = await app.inject({ url: '/readyz' })
    assert.equal(ready.statusCode, 503, ready.body)
    const { database, ...refusal } = ready.json<{ database: { state: string, engine: string } }>()
    assert.deepEqual(refusal, { code: 'service_unavailable', message: 'the database does not answer', status: 503, replicas: [], mailOutbox: { state: 'unknown' } })
    assert.equal(database.state, 'down', 'the answer says why it is not ready')
    assert.equal(ready.headers['retry-after'], '1')
    const list = await app.inject({ url: '/v1/pets?limit=3', headers: auth })
    assert.equal(list.statusCode, 503, list.body)
    assert.equal(list.json<{ code: string }>().code, 'service_unavailable')
    assert.equal(list.headers['retry-after'], '1')
    const create = await app.inject({ method: 'POST', url: '/v1/pets', headers: { ...auth, 'content-type': 'application/json' }, payload: '{"name":"a","categoryId":1}' })
    assert.equal(create.statusCode, 503, create.body)
    assert.ok(Date.now() - started < 20_000, 'requests during the outage are answered within bounded time')
    assert.equal((await app.inject({ url: '/healthz' })).statusCode, 200, 'the process itself stays alive')

    await relay.start()
    let status = 0
    for (let attempt = 0; attempt < 50 && status !== 200; attempt++) {
      status = (await app.inject({ url: '/readyz' })).statusCode
    }
    assert.equal(status, 200, 'ready again once the database is back')
    const after = await app.inject({ method: 'POST', url: '/v1/pets', headers: { ...auth, 'content-type': 'application/json' }, payload: '{"name":"back","categoryId":1}' })
    assert.equal(after.statusCode, 201, after.body)
  })
})
