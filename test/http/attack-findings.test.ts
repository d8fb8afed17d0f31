import { once } from 'node:events'
import { connect, type Socket } from 'node:net'
import { describe, test } from 'node:test'
import assert from 'node:assert/strict'
import { pino } from 'pino'
import { logLineSink } from '../helpers/log-lines.js'
import { eventually } from '../helpers/eventually.js'
import { startServer, type TestServer } from '../helpers/start-server.js'
import { buildTestApp, METRICS_AUTH, perSuite } from '../helpers/build-app.js'

/** A raw connection to the server, with everything it receives kept. */
async function rawConnection (server: TestServer): Promise<{ socket: Socket, received: () => string, closed: Promise<unknown> }> {
  const socket = connect(Number(new URL(server.baseUrl).port), '127.0.0.1')
  socket.on('error', () => {})
  await once(socket, 'connect')
  let received = ''
  socket.setEncoding('latin1').on('data', (chunk: string) => { received += chunk })
  const closed = once(socket, 'close')
  return { socket, received: () => received, closed }
}

/** Resolves once the received text matches, or rejects after the deadline. */
async function until (what: () => boolean, deadlineMs: number): Promise<void> {
  await eventually(() => assert.ok(what(), 'the text received so far does not match'), { timeout: deadlineMs, interval: 10 })
}

/**
 * One server for every test that needs no logger of its own: each opens connections of its own, and
 * the one that checks that nothing was created compares the catalogue before and after.
 */
const shared = perSuite(async (scope) => await startServer(scope))

describe('an unauthenticated upload', () => {
  test('is answered 401 with Connection: close, and the server closes the connection without reading the body', { timeout: 30_000 }, async () => {
    const server = await shared()
    const { socket, received, closed } = await rawConnection(server)
    socket.write('POST /v1/pets HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\nContent-Length: 1000000000\r\n\r\n')
    socket.write(Buffer.alloc(16 * 1024, 0x20))
    await until(() => /\r\n\r\n/.test(received()), 10_000)
    assert.match(received(), /^HTTP\/1\.1 401 /)
    assert.match(received(), /\r\nconnection: close\r\n/i)
    // The server ends the connection: the rest of the gigabyte is never needed.
    await Promise.race([closed, new Promise((_resolve, reject) => setTimeout(() => reject(new Error('the connection stayed open')), 10_000))])
  })

  test('with Expect: 100-continue gets its 401 without a 100 Continue first; a keyed one gets 100 Continue, then 201', { timeout: 30_000 }, async () => {
    const server = await shared()
    const body = '{"name":"Rex","categoryId":1}'
    const anonymous = await rawConnection(server)
    anonymous.socket.write(`POST /v1/pets HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\nContent-Length: ${body.length}\r\nExpect: 100-continue\r\n\r\n`)
    await until(() => /\r\n\r\n/.test(anonymous.received()), 10_000)
    assert.match(anonymous.received(), /^HTTP\/1\.1 401 /, 'no 100 Continue before the refusal')

    const keyed = await rawConnection(server)
    keyed.socket.write(`POST /v1/pets HTTP/1.1\r\nHost: x\r\nAuthorization: Bearer ${server.key}\r\nContent-Type: application/json\r\nContent-Length: ${body.length}\r\nExpect: 100-continue\r\n\r\n`)
    await until(() => /^HTTP\/1\.1 100 Continue\r\n\r\n/.test(keyed.received()), 10_000)
    keyed.socket.write(body)
    await until(() => /HTTP\/1\.1 201 /.test(keyed.received()), 10_000)
    keyed.socket.destroy()
  })

  test('an answered request without a body keeps its connection open', async () => {
    const server = await shared()
    const { socket, received } = await rawConnection(server)
    socket.write('GET /v1/pets HTTP/1.1\r\nHost: x\r\n\r\n')
    await until(() => /\r\n\r\n/.test(received()), 10_000)
    assert.match(received(), /^HTTP\/1\.1 401 /)
    assert.match(received(), /\r\nconnection: keep-alive\r\n/i)
    socket.destroy()
  })
})

/** Resolves once the socket is closed, or rejects after the deadline. */
async function closedWithin (closed: Promise<unknown>, deadlineMs: number): Promise<void> {
  let timer: NodeJS.Timeout | undefined
  await Promise.race([closed, new Promise((_resolve, reject) => { timer = setTimeout(() => reject(new Error('the connection stayed open')), deadlineMs) })])
  clearTimeout(timer)
}

describe('a body nobody reads', () => {
  const requests = ['GET /healthz', 'GET /readyz', 'GET /docs', 'GET /v1/openapi.json', 'GET /portal/login', 'GET /', 'POST /portal/nope', 'GET /v1/pets', 'GET /v1/pets/1']
  for (const request of requests) {
    test(`${request} with Content-Length: 1000000000 is answered with Connection: close, and the rest is never read`, { timeout: 30_000 }, async () => {
      const server = await shared()
      const { socket, received, closed } = await rawConnection(server)
      socket.write(`${request} HTTP/1.1\r\nHost: x\r\nAuthorization: Bearer ${server.key}\r\nContent-Length: 1000000000\r\n\r\n`)
      socket.write(Buffer.alloc(16 * 1024, 0x20))
      await until(() => /\r\n\r\n/.test(received()), 10_000)
      assert.match(received(), /^HTTP\/1\.1 [2-5]\d\d /)
      assert.match(received(), /\r\nconnection: close\r\n/i)
      await closedWithin(closed, 10_000)
    })
  }

  test('a chunked body nobody reads is not read either', { timeout: 30_000 }, async () => {
    const server = await shared()
    const { socket, received, closed } = await rawConnection(server)
    socket.write('GET /healthz HTTP/1.1\r\nHost: x\r\nTransfer-Encoding: chunked\r\n\r\n4000\r\n')
    socket.write(Buffer.alloc(16 * 1024, 0x20))
    await until(() => /\r\n\r\n/.test(received()), 10_000)
    assert.match(received(), /^HTTP\/1\.1 200 /)
    assert.match(received(), /\r\nconnection: close\r\n/i)
    await closedWithin(closed, 10_000)
  })

  test('a body the portal reads keeps the connection', { timeout: 30_000 }, async () => {
    const server = await shared()
    const { socket, received } = await rawConnection(server)
    const form = 'email=a%40example.com&password=x'
    socket.write(`POST /portal/login HTTP/1.1\r\nHost: x\r\nContent-Type: application/x-www-form-urlencoded\r\nContent-Length: ${form.length}\r\n\r\n${form}`)
    await until(() => /\r\n\r\n/.test(received()), 10_000)
    assert.doesNotMatch(received().split('\r\n\r\n')[0] ?? '', /\r\nconnection: close/i)
    socket.destroy()
  })
})

describe('requests the HTTP parser refuses', () => {
  const refused: Array<[string, string, number, string]> = [
    ['a lower-case method', 'get /healthz HTTP/1.1\r\nHost: x\r\n\r\n', 400, 'invalid_request'],
    ['a NUL before the method', '\u0000GET /healthz HTTP/1.1\r\nHost: x\r\n\r\n', 400, 'invalid_request'],
    ['a header name with a space', 'GET /healthz HTTP/1.1\r\nHost: x\r\nBad Name: y\r\n\r\n', 400, 'invalid_request'],
    ['an oversized header', `GET /healthz HTTP/1.1\r\nHost: x\r\nX-Big: ${'a'.repeat(20_000)}\r\n\r\n`, 431, 'header_fields_too_large'],
    ['Transfer-Encoding: gzip alone', 'POST /v1/pets HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\nTransfer-Encoding: gzip\r\n\r\n', 501, 'not_implemented'],
    ['CONNECT', 'CONNECT example.com:443 HTTP/1.1\r\nHost: example.com:443\r\n\r\n', 400, 'invalid_request']
  ]
  for (const [what, request, status, code] of refused) {
    test(`${what} gets ${status} ${code} in the error shape, with Connection: close`, { timeout: 30_000 }, async () => {
      const server = await shared()
      const { socket, received, closed } = await rawConnection(server)
      socket.write(request, 'latin1')
      await closedWithin(closed, 10_000)
      const [head = '', body = ''] = received().split('\r\n\r\n')
      assert.match(head, new RegExp(`^HTTP/1\\.1 ${status} `))
      assert.match(head, /\r\nconnection: close(\r\n|$)/i)
      assert.match(head, /\r\ncontent-type: application\/json/i)
      const parsed = JSON.parse(body) as Record<string, unknown>
      assert.deepEqual(Object.keys(parsed), ['code', 'message', 'status'])
      assert.equal(parsed.code, code)
      assert.equal(parsed.status, status)
    })
  }

  test('are counted in the metrics by status, and logged as one warning for a burst', { timeout: 30_000 }, async (t) => {
    const { sink, lines } = logLineSink()
    const testApp = await buildTestApp(t, {}, pino({ level: 'info' }, sink))
    await testApp.app.listen({ host: '127.0.0.1', port: 0 })
    const address = testApp.app.server.address()
    assert.ok(address !== null && typeof address === 'object')
    const server = { ...testApp, baseUrl: `http://127.0.0.1:${address.port}` }
    for (const request of ['get / HTTP/1.1\r\n\r\n', 'get / HTTP/1.1\r\n\r\n', 'get / HTTP/1.1\r\n\r\n', 'CONNECT a:1 HTTP/1.1\r\n\r\n']) {
      const { socket, closed } = await rawConnection(server)
      socket.write(request)
      await closedWithin(closed, 10_000)
    }
    const metrics = await testApp.app.inject({ url: '/metrics', headers: METRICS_AUTH })
    assert.match(metrics.body, /^http_parser_refusals_total\{status="400"\} 4$/m)
    const warnings = lines.filter((line) => line.msg === 'refused requests that are not valid HTTP before any route')
    assert.equal(warnings.length, 1, JSON.stringify(lines))
    assert.equal(warnings[0]?.level, 40)
    assert.equal(warnings[0]?.status, 400)
  })
})

describe('the logs', () => {
  test('a client that goes away in the middle of its body is an info line without a stack, not an error', { timeout: 30_000 }, async (t) => {
    const { sink, lines } = logLineSink()
    const testApp = await buildTestApp(t, {}, pino({ level: 'info' }, sink))
    await testApp.app.listen({ host: '127.0.0.1', port: 0 })
    const address = testApp.app.server.address()
    if (address === null || typeof address === 'string') throw new Error('no address')
    const socket = connect(address.port, '127.0.0.1')
    socket.on('error', () => {})
    await once(socket, 'connect')
    socket.write(`POST /v1/pets HTTP/1.1\r\nHost: x\r\nAuthorization: Bearer ${testApp.key}\r\nContent-Type: application/json\r\nContent-Length: 100\r\n\r\n{"name":`)
    const answered = new Promise<void>((resolve) => testApp.app.server.once('request', (_request, response) => { response.once('close', () => resolve()) }))
    await new Promise((resolve) => setTimeout(resolve, 0))
    socket.destroy()
    await answered
    await eventually(() => assert.ok(lines.some((line) => /went away/.test(String(line.msg))), JSON.stringify(lines)), { timeout: 5000, interval: 0 })
    const serious = lines.filter((line) => Number(line.level) >= 50)
    assert.deepEqual(serious, [], 'nothing at error level')
    assert.ok(lines.every((line) => JSON.stringify(line).includes('"stack"') === false), JSON.stringify(lines))
    assert.ok(lines.some((line) => Number(line.level) === 30 && /went away/.test(String(line.msg))), JSON.stringify(lines))
    const metrics = await testApp.app.inject({ url: '/metrics', headers: METRICS_AUTH })
    assert.match(metrics.body, /^http_requests_in_flight 1$/m, 'the abandoned request left the in-flight count (only the scrape is in flight)')
  })

  test('never hold a key: a query value that looks like one, or a parameter named like a secret, is redacted in the access log', async (t) => {
    const { sink, lines } = logLineSink()
    const { app, key, auth } = await buildTestApp(t, {}, pino({ level: 'info' }, sink))
    const urls = [
      `/v1/pets?api_key=${key}`,
      `/v1/pets?limit=5&key=${key}`,
      '/v1/pets?token=secret-value-1&access_token=secret-value-2',
      `/v1/pets?q=${key}`,
      `/v1/pets/${key}`
    ]
    for (const url of urls) await app.inject({ url, headers: auth })
    const logged = lines.filter((line) => line.msg === 'request completed').map((line) => String(line.url))
    assert.equal(logged.length, urls.length, JSON.stringify(lines))
    for (const url of logged) {
      assert.ok(!url.includes(key.slice(4, 20)), url)
      assert.ok(!/secret-value/.test(url), url)
    }
    assert.ok(logged.includes('/v1/pets?limit=5&key=[redacted]'), JSON.stringify(logged))
    assert.ok(lines.every((line) => !JSON.stringify(line).includes(key.slice(4, 20))), 'no line holds the key')
  })
})

describe('keys kept out of the logs (issue 39, finding 6)', () => {
  test('a key percent-encoded in the path or the query, or a secret\'s name encoded, is redacted once decoded', async (t) => {
    const { sink, lines } = logLineSink()
    const { app, key, auth } = await buildTestApp(t, {}, pino({ level: 'info' }, sink))
    const everyCharEncoded = [...key].map((char) => `%${char.charCodeAt(0).toString(16).toUpperCase()}`).join('')
    const urls = [
      `/v1/pets?k=${key.replace('_', '%5F')}`,
      `/v1/pets?limit=5&k=${everyCharEncoded}`,
      `/v1/pets/${key.replace('_', '%5f')}`,
      '/v1/pets?%6Bey=secret-value-3',
      `/v1/pets?q=%22${key}`
    ]
    for (const url of urls) await app.inject({ url, headers: auth })
    const logged = lines.filter((line) => line.msg === 'request completed').map((line) => String(line.url))
    assert.deepEqual(logged, [
      '/v1/pets?k=[redacted]',
      '/v1/pets?limit=5&k=[redacted]',
      '/v1/pets/[redacted]',
      '/v1/pets?%6Bey=[redacted]',
      '/v1/pets?q=[redacted]'
    ])
    assert.ok(lines.every((line) => !JSON.stringify(line).includes(key.slice(4, 20))), 'no line holds the key')
  })

  test('an X-Request-Id shaped like a key, live or test, is replaced by a new id in the answer and in every log line', async (t) => {
    const { sink, lines } = logLineSink()
    const { app, key, auth } = await buildTestApp(t, {}, pino({ level: 'info' }, sink))
    const testShaped = 'ask_test_4f9Qz81mXcPq20LsWb7e'
    const ordinary = ['req-42', 'task_12345678']
    for (const [url, id] of [['/v1/pets', key], ['/v1/pets', testShaped], ['/healthz', key], ...ordinary.map((id) => ['/v1/pets', id])] as const) {
      const response = await app.inject({ url, headers: { ...auth, 'x-request-id': id } })
      const answered = String(response.headers['x-request-id'])
      if (ordinary.includes(id)) assert.equal(answered, id, 'an ordinary id is kept')
      else assert.match(answered, /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/, `${url}: ${answered}`)
    }
    assert.equal(lines.filter((line) => line.msg === 'request completed').length, 5, JSON.stringify(lines))
    for (const secret of [key.slice(4, 20), testShaped.slice(4)]) {
      assert.ok(lines.every((line) => !JSON.stringify(line).includes(secret)), `no line holds ${secret}`)
    }
  })
})

describe('the access log\'s URL', () => {
  test('with characters that JSON escapes is written as received, in one valid line', async (t) => {
    const { sink, lines } = logLineSink()
    const testApp = await buildTestApp(t, {}, pino({ level: 'info' }, sink))
    await testApp.app.listen({ host: '127.0.0.1', port: 0 })
    const address = testApp.app.server.address()
    assert.ok(address !== null && typeof address === 'object')
    const server = { ...testApp, baseUrl: `http://127.0.0.1:${address.port}` }
    // Node's parser takes quotes and backslashes in a URL (and refuses control characters and any beyond ASCII).
    const urls = ['/v1/pets?q=a"b\\c', '/v1/pets/\\"', `/v1/pets?q=${testApp.key}"`]
    for (const url of urls) {
      const { socket, received, closed } = await rawConnection(server)
      socket.write(`GET ${url} HTTP/1.1\r\nHost: x\r\nAuthorization: Bearer ${testApp.key}\r\nConnection: close\r\n\r\n`)
      // Answered, and the connection closed: the request is over.
      await closed
      assert.match(received(), /^HTTP\/1\.1 (200|400|404) /)
    }
    const logged = (): string[] => lines.filter((line) => line.msg === 'request completed').map((line) => String(line.url))
    await eventually(() => assert.deepEqual(logged(), [...urls.slice(0, 2), '/v1/pets?q=[redacted]"']), { timeout: 5000, interval: 10 })
  })
})

describe('small answers that should be stricter', () => {
  test('two Authorization headers get 400 invalid_request', async () => {
    const server = await shared()
    const { socket, received } = await rawConnection(server)
    socket.write(`GET /v1/pets HTTP/1.1\r\nHost: x\r\nAuthorization: Bearer ${server.key}\r\nAuthorization: Bearer ask_other\r\n\r\n`)
    await until(() => /\r\n\r\n.*\}/s.test(received()), 10_000)
    assert.match(received(), /^HTTP\/1\.1 400 /)
    assert.match(received(), /"code":"invalid_request","message":"send one Authorization header, not several"/)
    socket.destroy()
  })

  test('a Content-Type naming its charset twice gets 415', async () => {
    const { app, auth } = await shared()
    for (const contentType of ['application/json; charset=utf-8; charset=latin1', 'application/json; charset=utf-8; charset=utf-8']) {
      const response = await app.inject({ method: 'POST', url: '/v1/pets', headers: { ...auth, 'content-type': contentType }, payload: '{"name":"Rex","categoryId":1}' })
      assert.equal(response.statusCode, 415, `${contentType}: ${response.body}`)
    }
  })

  test('a Transfer-Encoding other than chunked is refused with 400 before any route', { timeout: 30_000 }, async () => {
    const server = await shared()
    const { socket, received } = await rawConnection(server)
    socket.write(`POST /v1/pets HTTP/1.1\r\nHost: x\r\nAuthorization: Bearer ${server.key}\r\nContent-Type: application/json\r\nTransfer-Encoding: gzip\r\n\r\n`)
    await until(() => /\r\n\r\n/.test(received()), 10_000)
    assert.match(received(), /^HTTP\/1\.1 (400|501) /)
    socket.destroy()
  })

  test('Transfer-Encoding: gzip, chunked gets 501 not_implemented, on the API and off it, and the body is not read', { timeout: 30_000 }, async () => {
    const server = await shared()
    const listed = async (): Promise<string> => await (await fetch(`${server.baseUrl}/v1/pets?limit=100`, { headers: { authorization: `Bearer ${server.key}` } })).text()
    const before = await listed()
    for (const [path, auth] of [['/v1/pets', `Authorization: Bearer ${server.key}\r\n`], ['/portal/login', '']]) {
      const { socket, received, closed } = await rawConnection(server)
      socket.write(`POST ${path} HTTP/1.1\r\nHost: x\r\n${auth}Content-Type: application/json\r\nTransfer-Encoding: gzip, chunked\r\n\r\n1d\r\n{"name":"Rex","categoryId":1}\r\n`)
      await until(() => /\r\n\r\n.*\}/s.test(received()), 10_000)
      assert.match(received(), /^HTTP\/1\.1 501 /, path)
      assert.match(received(), /\r\n\r\n\{"code":"not_implemented","message":"a Transfer-Encoding other than chunked is not implemented[^"]*","status":501\}$/, path)
      assert.match(received(), /\r\nconnection: close\r\n/i, path)
      await closedWithin(closed, 10_000)
    }
    assert.equal(await listed(), before, 'no animal was created')
  })

  test('Transfer-Encoding: Chunked, in any case, is still taken', { timeout: 30_000 }, async () => {
    const server = await shared()
    const { socket, received } = await rawConnection(server)
    socket.write(`POST /v1/pets HTTP/1.1\r\nHost: x\r\nAuthorization: Bearer ${server.key}\r\nContent-Type: application/json\r\nTransfer-Encoding: Chunked\r\n\r\n1d\r\n{"name":"Rex","categoryId":1}\r\n0\r\n\r\n`)
    await until(() => /\r\n\r\n.*\}/s.test(received()), 10_000)
    assert.match(received(), /^HTTP\/1\.1 201 /)
    socket.destroy()
  })

  test('two Content-Type headers get 400 invalid_request, whichever comes first', { timeout: 30_000 }, async () => {
    const server = await shared()
    const body = '{"name":"Rex","categoryId":1}'
    for (const [first, second] of [['application/json', 'text/plain'], ['text/plain', 'application/json']]) {
      const { socket, received } = await rawConnection(server)
      socket.write(`POST /v1/pets HTTP/1.1\r\nHost: x\r\nAuthorization: Bearer ${server.key}\r\nContent-Type: ${first}\r\ncontent-type: ${second}\r\nContent-Length: ${body.length}\r\n\r\n${body}`)
      await until(() => /\r\n\r\n.*\}/s.test(received()), 10_000)
      assert.match(received(), /^HTTP\/1\.1 400 /, first)
      assert.match(received(), /"code":"invalid_request","message":"send one Content-Type header, not several"/, first)
      socket.destroy()
    }
  })

  test('a path segment longer than the router takes names the real limit', async () => {
    const { app, auth } = await shared()
    const response = await app.inject({ url: `/v1/pets/${'1'.repeat(3000)}`, headers: auth })
    assert.equal(response.statusCode, 400, response.body)
    assert.match(response.json<{ message: string }>().message, /2048/)
  })

  test('two byte-order marks are invalid JSON, not a body nested too deeply', async () => {
    const { app, auth } = await shared()
    const response = await app.inject({ method: 'POST', url: '/v1/pets', headers: { ...auth, 'content-type': 'application/json' }, payload: Buffer.concat([Buffer.from([0xef, 0xbb, 0xbf, 0xef, 0xbb, 0xbf]), Buffer.from('{"name":"Rex","categoryId":1}')]) })
    assert.equal(response.statusCode, 400, response.body)
    assert.match(response.json<{ message: string }>().message, /^the request body is not valid JSON/)
  })

  test('categoryId is any JSON number whose exact value is an integer of the int64 range, whatever its form', async () => {
    const { app, auth } = await shared()
    const accepted: Array<[string, string]> = [['5', '5'], ['5.0', '5'], ['5e0', '5'], ['5E2', '500'], ['1e18', '1000000000000000000'], ['9.223372036854775807e18', '9223372036854775807'], ['-0', '0']]
    for (const [literal, stored] of accepted) {
      const response = await app.inject({ method: 'POST', url: '/v1/pets', headers: { ...auth, 'content-type': 'application/json' }, payload: `{"name":"Rex","categoryId":${literal}}` })
      assert.equal(response.statusCode, 201, `${literal}: ${response.body}`)
      assert.match(response.body, new RegExp(`"categoryId":${stored}[,}]`), literal)
    }
    for (const literal of ['5.5', '1e-1', '9223372036854775808', '1e19', '-9223372036854775809']) {
      const response = await app.inject({ method: 'POST', url: '/v1/pets', headers: { ...auth, 'content-type': 'application/json' }, payload: `{"name":"Rex","categoryId":${literal}}` })
      assert.equal(response.statusCode, 400, `${literal}: ${response.body}`)
    }
  })
})
