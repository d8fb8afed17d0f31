import { connect, createServer, type AddressInfo, type Socket } from 'node:net'
import { once } from 'node:events'
import { describe, test } from 'node:test'
import assert from 'node:assert/strict'
import { pino } from 'pino'
import { shedsFor } from '../../src/http/steps/load-shedding.js'
import { loadConfig } from '../../src/config.js'
import { buildTestApp, createTestKey, METRICS_AUTH, perSuite, TEST_DEFAULTS, buildServedApp } from '../helpers/build-app.js'
import { logLineSink } from '../helpers/log-lines.js'
import { redisAvailable, REDIS_URL } from '../helpers/redis.js'
import { routePaths } from '../helpers/routes.js'
import { openRawConnection, startServer, stoppedListening } from '../helpers/start-server.js'

/** The app of the default configuration, for the tests that only look at what it answers. */
const defaultApp = perSuite(async (scope) => await buildTestApp(scope))

describe('rate limiting', () => {
  test('is off by default: no RateLimit headers', async () => {
    const { app, auth } = await defaultApp()
    const response = await app.inject({ url: '/v1/pets', headers: auth })
    assert.equal(response.headers.ratelimit, undefined)
    assert.equal(response.headers['ratelimit-policy'], undefined)
  })

  test('counts per key, announces the IETF draft headers and answers 429 rate_limited with Retry-After', async (t) => {
    const testApp = await buildTestApp(t, { RATE_LIMIT_PER_MINUTE: '3' })
    for (const remaining of [2, 1, 0]) {
      const response = await testApp.app.inject({ url: '/v1/pets', headers: testApp.auth })
      assert.equal(response.statusCode, 200, response.body)
      assert.equal(response.headers['ratelimit-policy'], '"per-key";q=3;w=60')
      assert.match(String(response.headers.ratelimit), new RegExp(`^"per-key";r=${remaining};t=\\d+$`))
      assert.equal(response.headers['x-ratelimit-limit'], undefined)
    }
    const limited = await testApp.app.inject({ url: '/v1/pets', headers: testApp.auth })
    assert.equal(limited.statusCode, 429, limited.body)
    assert.deepEqual(Object.keys(limited.json()).sort(), ['code', 'message', 'status'])
    assert.equal(limited.json<{ code: string }>().code, 'rate_limited')
    assert.equal(limited.json<{ status: number }>().status, 429)
    assert.match(String(limited.headers['retry-after']), /^\d+$/)
    assert.match(String(limited.headers.ratelimit), /^"per-key";r=0;t=\d+$/)

    const otherKey = await createTestKey(testApp.store, 'other@example.com')
    const other = await testApp.app.inject({ url: '/v1/pets', headers: { authorization: `Bearer ${otherKey}` } })
    assert.equal(other.statusCode, 200, 'another key has a budget of its own')
    const anonymous = await testApp.app.inject({ url: '/v1/pets' })
    assert.equal(anonymous.statusCode, 401, 'requests without a valid key are refused before they are counted')
    assert.equal((await testApp.app.inject({ url: '/v1/openapi.json' })).statusCode, 200, 'public routes are not limited')
  })

  test('is shared by instances through Redis when REDIS_URL is set', async (t) => {
    if (!await redisAvailable()) {
      t.skip('Redis is not reachable')
      return
    }
    const first = await buildTestApp(t, { RATE_LIMIT_PER_MINUTE: '3', REDIS_URL })
    const second = await buildServedApp({ config: loadConfig({ ...TEST_DEFAULTS, RATE_LIMIT_PER_MINUTE: '3', REDIS_URL }), store: first.store, logger: pino({ level: 'silent' }) })
    t.after(() => second.close())
    // Each instance may admit one request (the slack of a limit of 3) before it has seen the other's.
    const statuses: number[] = []
    for (let round = 0; round < 4; round++) {
      for (const app of [first.app, second]) statuses.push((await app.inject({ url: '/v1/pets', headers: first.auth })).statusCode)
    }
    const admitted = statuses.filter((status) => status === 200).length
    assert.ok(admitted >= 3 && admitted <= 5, JSON.stringify(statuses))
    assert.deepEqual(statuses.slice(-2), [429, 429], JSON.stringify(statuses))
  })

  test('counts from the first request when Redis is slow to answer: start-up waits for it', async (t) => {
    if (!await redisAvailable()) {
      t.skip('Redis is not reachable')
      return
    }
    const slowRedis = await slowToAnswer(REDIS_URL, 300)
    t.after(() => slowRedis.close())
    const { app, auth } = await buildTestApp(t, { RATE_LIMIT_PER_MINUTE: '1', REDIS_URL: slowRedis.url })
    const statuses: number[] = []
    for (let request = 0; request < 2; request++) statuses.push((await app.inject({ url: '/v1/pets', headers: auth })).statusCode)
    assert.deepEqual(statuses, [200, 429])
  })

  test('counts per instance, says so in a warning and in /metrics, and never answers 5xx, when Redis is not there', async (t) => {
    const closedPort = await unusedPort()
    const { sink, lines } = logLineSink()
    const { app, auth } = await buildTestApp(t, { RATE_LIMIT_PER_MINUTE: '2', REDIS_URL: `redis://127.0.0.1:${closedPort}` }, pino({ level: 'warn' }, sink))
    const statuses: number[] = []
    for (let request = 0; request < 3; request++) statuses.push((await app.inject({ url: '/v1/pets', headers: auth })).statusCode)
    assert.deepEqual(statuses, [200, 200, 429])
    assert.ok(lines.some((line) => /rate limits are counted per instance/.test(String(line.msg))), JSON.stringify(lines))
    assert.match((await app.inject({ url: '/metrics', headers: METRICS_AUTH })).body, /^rate_limit_shared 0$/m)
  })
})

/** A proxy to Redis that forwards nothing, either way, until `delayMs` after each connection arrives. */
async function slowToAnswer (redisUrl: string, delayMs: number): Promise<{ url: string, close: () => Promise<void> }> {
  const target = new URL(redisUrl)
  const sockets = new Set<Socket>()
  const proxy = createServer((client) => {
    client.pause()
    sockets.add(client)
    const timer = setTimeout(() => {
      const upstream = connect(Number(target.port || 6379), target.hostname, () => {
        client.pipe(upstream).pipe(client)
        client.resume()
      })
      sockets.add(upstream)
      upstream.on('error', () => client.destroy())
    }, delayMs)
    client.on('error', () => {})
    client.on('close', () => clearTimeout(timer))
  })
  proxy.listen(0, '127.0.0.1')
  await once(proxy, 'listening')
  const { port } = proxy.address() as AddressInfo
  return {
    url: `redis://127.0.0.1:${port}`,
    close: async () => {
      for (const socket of sockets) socket.destroy()
      proxy.close()
      await once(proxy, 'close')
    }
  }
}

/** A loopback port nothing listens on. */
async function unusedPort (): Promise<number> {
  const server = createServer()
  server.listen(0, '127.0.0.1')
  await once(server, 'listening')
  const { port } = server.address() as AddressInfo
  server.close()
  await once(server, 'close')
  return port
}

describe('load shedding', () => {
  test('sheds only for an event-loop delay measured above the limit, not for one the histogram could not measure', () => {
    assert.equal(shedsFor(1200, 1000), true)
    assert.equal(shedsFor(1000, 1000), false)
    assert.equal(shedsFor(300, 1000), false)
    assert.equal(shedsFor(Infinity, 1000), false)
    assert.equal(shedsFor(undefined, 1000), false)
  })

  test('answers 503 service_unavailable with Retry-After while the event loop lags, says so in a warning, then recovers', { timeout: 30_000 }, async (t) => {
    const { sink, lines: warnings } = logLineSink()
    const { app, auth } = await buildTestApp(t, { LOAD_SHED_EVENT_LOOP_DELAY_MS: '50' }, pino({ level: 'warn' }, sink))
    await app.ready()
    let shed: { statusCode: number, headers: Record<string, unknown>, body: string } | undefined
    let shedCount = 0
    for (let attempt = 0; attempt < 20 && shed === undefined; attempt++) {
      const blockedUntil = Date.now() + 300
      while (Date.now() < blockedUntil) { /* keep the event loop busy, as an overload would */ }
      await new Promise((resolve) => setImmediate(resolve))
      for (let probe = 0; probe < 20 && shed === undefined; probe++) {
        const response = await app.inject({ url: '/v1/pets', headers: auth })
        if (response.statusCode === 503) {
          shed = response
          shedCount++
        } else assert.equal(response.statusCode, 200, response.body)
        await new Promise((resolve) => setTimeout(resolve, 10))
      }
    }
    assert.ok(shed, 'no request was shed although the event loop was blocked')
    assert.deepEqual(JSON.parse(shed.body), { code: 'service_unavailable', message: 'the service is overloaded; retry shortly', status: 503 })
    assert.equal(shed.headers['retry-after'], '1')
    const warning = warnings.find((line) => line.msg === 'the event loop lags: shedding requests with 503')
    assert.ok(warning, JSON.stringify(warnings))
    assert.equal(warning.limitMs, 50)
    assert.ok(typeof warning.eventLoopDelayMs === 'number' && warning.eventLoopDelayMs > 50, JSON.stringify(warning))
    assert.equal(warning.shed, 1)
    let status = 503
    for (let attempt = 0; attempt < 200 && status !== 200; attempt++) {
      status = (await app.inject({ url: '/v1/pets', headers: auth })).statusCode
      if (status === 503) shedCount++
      if (status !== 200) await new Promise((resolve) => setTimeout(resolve, 20))
    }
    assert.equal(status, 200, 'requests are served again once the loop is idle')
    // Every shed request is counted, the scrapes shed on the way included.
    let scrape = await app.inject({ url: '/metrics', headers: METRICS_AUTH })
    for (let attempt = 0; attempt < 200 && scrape.statusCode === 503; attempt++) {
      shedCount++
      await new Promise((resolve) => setTimeout(resolve, 20))
      scrape = await app.inject({ url: '/metrics', headers: METRICS_AUTH })
    }
    assert.match(scrape.body, new RegExp(`^http_requests_shed_total ${shedCount}$`, 'm'))
  })
})

describe('CORS', () => {
  test('is off by default: no Access-Control-Allow-Origin even for a browser origin', async () => {
    const { app, auth } = await defaultApp()
    const response = await app.inject({ url: '/v1/pets', headers: { ...auth, origin: 'https://evil.example' } })
    assert.equal(response.headers['access-control-allow-origin'], undefined)
  })

  test('allows only the listed origins, and answers their preflight without a key', async (t) => {
    const { app, auth } = await buildTestApp(t, { CORS_ORIGINS: 'https://app.example.com' })
    const preflight = await app.inject({
      method: 'OPTIONS',
      url: '/v1/pets',
      headers: { origin: 'https://app.example.com', 'access-control-request-method': 'POST', 'access-control-request-headers': 'authorization, content-type' }
    })
    assert.equal(preflight.statusCode, 204, preflight.body)
    assert.equal(preflight.headers['access-control-allow-origin'], 'https://app.example.com')
    assert.match(String(preflight.headers['access-control-allow-headers']), /Authorization/)
    const allowed = await app.inject({ url: '/v1/pets', headers: { ...auth, origin: 'https://app.example.com' } })
    assert.equal(allowed.headers['access-control-allow-origin'], 'https://app.example.com')
    assert.match(String(allowed.headers['access-control-expose-headers']), /Link/)
    const refused = await app.inject({ url: '/v1/pets', headers: { ...auth, origin: 'https://evil.example' } })
    assert.equal(refused.headers['access-control-allow-origin'], undefined)
  })
})

describe('slow clients', () => {
  test('sockets that never finish their headers are closed while normal requests are served', { timeout: 30_000 }, async (t) => {
    const server = await startServer(t, { HEADERS_TIMEOUT_MS: '1000', REQUEST_TIMEOUT_MS: '2000' })
    const { port } = new URL(server.baseUrl)
    const slow: Socket[] = []
    for (let i = 0; i < 50; i++) {
      const socket = connect(Number(port), '127.0.0.1')
      socket.on('error', () => {})
      // Read whatever the server says (its 408), so that its close reaches this end.
      socket.resume()
      await once(socket, 'connect')
      socket.write('GET /v1/pets HTTP/1.1\r\nHost: x\r\nX-Slow: ')
      slow.push(socket)
    }
    t.after(() => { for (const socket of slow) socket.destroy() })
    const closed = Promise.all(slow.map((socket) => socket.closed ? Promise.resolve() : once(socket, 'close')))

    const normal = await fetch(`${server.baseUrl}/v1/pets`, { headers: server.auth })
    assert.equal(normal.status, 200, 'a normal request is served while slow sockets hang')
    await closed
    assert.ok(slow.every((socket) => socket.destroyed), 'every slow socket was closed by the server')
    const after = await fetch(`${server.baseUrl}/v1/pets`, { headers: server.auth })
    assert.equal(after.status, 200)
  })
})

describe('surface', () => {
  test('every response says nosniff and names no framework or version', async () => {
    const { app, auth } = await defaultApp()
    for (const [url, headers] of [['/v1/pets', auth], ['/v1/nope', auth], ['/v1/pets', {}], ['/docs', {}], ['/healthz', {}], ['/v1/openapi.json', {}]] as const) {
      const response = await app.inject({ url, headers })
      assert.equal(response.headers['x-content-type-options'], 'nosniff', url)
      assert.equal(response.headers['x-powered-by'], undefined, url)
      assert.equal(response.headers.server, undefined, url)
    }
  })

  test('outside /v1 the server answers only / (a redirect to /docs), /docs, /healthz, /readyz, /metrics and the developer portal under /portal', async () => {
    const { app } = await defaultApp()
    await app.ready()
    const outside = routePaths(app.printRoutes({ commonPrefix: false })).filter((path) => !path.startsWith('/v1'))
    const underPrefix = (path: string, prefix: string): boolean => path === prefix || path.startsWith(`${prefix}/`)
    const unexpected = outside.filter((path) => !(underPrefix(path, '/docs') || underPrefix(path, '/portal') || ['/', '/healthz', '/readyz', '/metrics'].includes(path)))
    assert.deepEqual(unexpected, [], app.printRoutes({ commonPrefix: false }))
  })
})

describe('shutting down', () => {
  test('once the server shuts down, a request in flight is answered, a request that arrives on an open connection gets 503 service_unavailable in the API error shape, and both connections close at once', async (t) => {
    const { app, key, baseUrl } = await startServer(t)
    const creating = await openRawConnection(t, baseUrl)
    const asking = await openRawConnection(t, baseUrl)

    // A request whose header is half sent keeps one connection busy while the server starts closing...
    asking.socket.write(`GET /v1/pets HTTP/1.1\r\nHost: test\r\nAuthorization: Bearer ${key}\r\n`)
    // ...and a create whose body is still on its way, written after it, keeps the other.
    const body = '{"name":"Rex","categoryId":1}'
    const arrived = once(app.server, 'request')
    creating.socket.write(`POST /v1/pets HTTP/1.1\r\nHost: test\r\nAuthorization: Bearer ${key}\r\nContent-Type: application/json\r\nContent-Length: ${body.length}\r\n\r\n${body.slice(0, 5)}`)
    await arrived
    const closed = app.close()
    await stoppedListening(app.server)
    asking.socket.write('\r\n')
    creating.socket.write(body.slice(5))
    await Promise.all([creating.ended, asking.ended])
    await closed

    const [createdHead = ''] = creating.received().split('\r\n\r\n')
    assert.match(createdHead, /^HTTP\/1\.1 201 /, creating.received())
    assert.match(createdHead, /\r\nconnection: close(\r\n|$)/i)
    const [head = '', refusedBody] = asking.received().split('\r\n\r\n')
    assert.match(head, /^HTTP\/1\.1 503 /, asking.received())
    assert.match(head, /\r\ncontent-type: application\/json; charset=utf-8\r\n/i)
    assert.match(head, /\r\nretry-after: 1\r\n/i)
    assert.match(head, /\r\nx-request-id: [0-9a-f-]{36}\r\n/i)
    assert.match(head, /\r\nconnection: close(\r\n|$)/i)
    assert.deepEqual(JSON.parse(refusedBody ?? ''), { code: 'service_unavailable', message: 'the service is shutting down; retry shortly', status: 503 })
  })
})
