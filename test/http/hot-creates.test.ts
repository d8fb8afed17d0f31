import { describe, test } from 'node:test'
import assert from 'node:assert/strict'
import { request as httpRequest } from 'node:http'
import Database from 'better-sqlite3'
import { TEST_ENGINE } from '../helpers/build-app.js'
import { startServer } from '../helpers/start-server.js'
import { twoServers } from '../helpers/two-servers.js'

interface Answer { status: number, headers: Record<string, string>, body: string }

/** The clock differs between two answers; ids differ because both servers create in one store. */
const VARYING = new Set(['date'])

/** Ids taken out, and with them Content-Length, once checked against the body. */
function normalised (answer: Answer): Answer {
  assert.equal(Number(answer.headers['content-length']), Buffer.byteLength(answer.body))
  const ids = (text: string): string => text.replace(/"id":\d+/g, '"id":N').replace(/\/v1\/pets\/\d+/g, '/v1/pets/N')
  const headers = Object.fromEntries(Object.entries(answer.headers).filter(([name]) => name !== 'content-length').map(([name, value]) => [name, ids(value)]))
  return { status: answer.status, headers, body: ids(answer.body) }
}

async function post (baseUrl: string, body: string, headers: Record<string, string>): Promise<Answer> {
  const response = await fetch(`${baseUrl}/v1/pets`, { method: 'POST', headers, body })
  const kept: Record<string, string> = {}
  response.headers.forEach((value, name) => { if (!VARYING.has(name)) kept[name] = value })
  return { status: response.status, headers: kept, body: await response.text() }
}

async function metricValue (baseUrl: string, name: string): Promise<number> {
  const text = await (await fetch(`${baseUrl}/metrics`)).text()
  return Number(new RegExp(`^${name} (\\d+)$`, 'm').exec(text)?.[1] ?? NaN)
}

describe('hot create path', () => {
  test('answers exactly as the framework does, for valid and invalid creates alike', async (t) => {
    const { hot, framework } = await twoServers(t)
    const json = { 'content-type': 'application/json' }
    const cases: Array<{ body: string, headers?: Record<string, string> }> = [
      { body: '{"name":"Rex","categoryId":1,"status":"available"}' },
      { body: '{"name":"Rex","categoryId":-7}' },
      { body: '{"status":"sold","categoryId":9007199254740991,"name":"Tom"}' },
      { body: '{"name":"Rex","categoryId":1}', headers: { 'content-type': 'application/json; charset=utf-8' } },
      { body: '{"name":"Rex","categoryId":1}', headers: { 'x-request-id': 'client-chosen-id-1' } },
      { body: '{"name":"Rex","categoryId":1}', headers: { traceparent: '00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01' } },
      { body: JSON.stringify({ name: 'x'.repeat(200), categoryId: 1 }) },
      { body: JSON.stringify({ name: 'Café Ünter', categoryId: 1 }) },
      { body: '{"name":"Rex","categoryId":9223372036854775807}' },
      { body: '{"name":"Rex","categoryId":-9223372036854775808}' },
      { body: JSON.stringify({ name: 'Rex 🐕', categoryId: 1 }) },
      { body: JSON.stringify({ name: '🐕'.repeat(200), categoryId: 1 }) },
      { body: JSON.stringify({ name: '🐕'.repeat(201), categoryId: 1 }) },
      { body: JSON.stringify({ name: 'x'.repeat(199) + '🐕', categoryId: 1 }) },
      { body: '{"name":"Rex\\ud83d\\udc15","categoryId":1}' },
      { body: '{"name":"Rex\\udc15\\ud83d","categoryId":1}' },
      // Invalid: every one of these is judged by the framework, replayed.
      { body: '' },
      { body: '{' },
      { body: 'null' },
      { body: '[]' },
      { body: '{"name":"Rex"}' },
      { body: '{"categoryId":1}' },
      { body: '{"name":"","categoryId":1}' },
      { body: JSON.stringify({ name: 'x'.repeat(201), categoryId: 1 }) },
      { body: '{"name":"Rex\\u0000","categoryId":1}' },
      { body: '{"name":"Rex\\ud800","categoryId":1}' },
      { body: '{"name":"Rex","categoryId":"1"}' },
      { body: '{"name":"Rex","categoryId":1.5}' },
      { body: '{"name":"Rex","categoryId":1.0000000000000001}' },
      { body: '{"name":"Rex","categoryId":9223372036854775808}' },
      { body: '{"name":"Rex","categoryId":1,"status":"lost"}' },
      { body: '{"name":"Rex","categoryId":1,"status":null}' },
      { body: '{"name":"Rex","categoryId":1,"id":5}' },
      { body: '{"name":"Rex","categoryId":1,"name":"Tom"}' },
      { body: '{"name":"Rex","categoryId":1,"__proto__":{"x":1}}' },
      { body: Buffer.from([0x7b, 0x22, 0x6e, 0x22, 0xff, 0x7d]).toString('latin1') },
      // Left to the framework before the body is read.
      { body: '{"name":"Rex","categoryId":1}', headers: { 'content-type': 'text/plain' } },
      { body: '{"name":"Rex","categoryId":1}', headers: { 'content-type': 'application/json; charset=latin1' } },
      { body: '{"name":"Rex","categoryId":1}', headers: { 'content-encoding': 'gzip' } },
      { body: '{"name":"Rex","categoryId":1}', headers: { 'idempotency-key': 'same-key-on-both' } },
      { body: JSON.stringify({ name: 'Rex', categoryId: 1, pad: 'x'.repeat(70_000) }) },
      { body: '{"name":"Rex","categoryId":1}', headers: { authorization: 'Bearer ask_000000000000000000000000000000000000000' } },
      { body: '{"name":"Rex","categoryId":1}', headers: { authorization: '' } }
    ]
    for (const { body, headers = {} } of cases) {
      // The same request id on both sides: a 500 quotes it in its message.
      const sent = { ...hot.auth, ...json, 'x-request-id': 'same-id-on-both', ...headers }
      // Twice: the first request with a key may verify it; the second finds it verified.
      for (let attempt = 0; attempt < 2; attempt++) {
        const context = `${body.slice(0, 80)} ${JSON.stringify(headers)}`
        const expected = normalised(await post(framework, body, sent).catch((error: Error) => { throw new Error(`framework: ${context}`, { cause: error }) }))
        const actual = normalised(await post(hot.baseUrl, body, sent).catch((error: Error) => { throw new Error(`hot: ${context}`, { cause: error }) }))
        assert.deepEqual(actual, expected, context)
      }
    }
    assert.ok(await metricValue(hot.baseUrl, 'http_hot_create_answers_total') >= 27, 'the hot path answered the valid creates (all but the very first, which verified the key)')
    assert.equal(await metricValue(framework, 'http_hot_create_answers_total'), 0)
  })

  test('a failing store gets the same 500 from both paths', { skip: TEST_ENGINE === 'postgres' && 'the failure is made with a SQLite trigger' }, async (t) => {
    const { hot, framework } = await twoServers(t)
    const sent = { ...hot.auth, 'content-type': 'application/json', 'x-request-id': 'same-id-on-both' }
    const body = '{"name":"Rex","categoryId":1}'
    assert.equal((await post(hot.baseUrl, body, sent)).status, 201)
    const db = new Database(hot.dbPath)
    t.after(() => db.close())
    db.exec("CREATE TRIGGER refuse_pets BEFORE INSERT ON pets BEGIN SELECT RAISE(ABORT, 'disk on fire'); END")
    const expected = normalised(await post(framework, body, sent))
    const actual = normalised(await post(hot.baseUrl, body, sent))
    assert.equal(expected.status, 500)
    assert.deepEqual(actual, expected)
    assert.equal((await hot.store.pets.listPage({ status: undefined, afterId: 0, limit: 10 })).count, 1)
  })

  test('a body that arrives in pieces is read whole', async (t) => {
    const server = await startServer(t)
    const body = '{"name":"Slow","categoryId":3,"status":"pending"}'
    const answer = await new Promise<{ status: number, body: string }>((resolve, reject) => {
      const request = httpRequest(`${server.baseUrl}/v1/pets`, {
        method: 'POST',
        headers: { ...server.auth, 'content-type': 'application/json', 'content-length': String(body.length) }
      }, (response) => {
        let text = ''
        response.setEncoding('utf8')
        response.on('data', (chunk: string) => { text += chunk })
        response.on('end', () => resolve({ status: response.statusCode ?? 0, body: text }))
      })
      request.on('error', reject)
      request.write(body.slice(0, 10))
      request.flushHeaders()
      setImmediate(() => request.end(body.slice(10)))
    })
    assert.equal(answer.status, 201, answer.body)
    assert.deepEqual(JSON.parse(answer.body), { id: 1, name: 'Slow', categoryId: 3, status: 'pending' })
  })
})
