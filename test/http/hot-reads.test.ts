import { describe, test, type TestContext } from 'node:test'
import assert from 'node:assert/strict'
import { Agent, request as httpRequest } from 'node:http'
import { startServer } from '../helpers/start-server.js'
import { twoServers } from '../helpers/two-servers.js'

interface Answer { status: number, headers: Record<string, string>, body: string }

/** Headers that legitimately differ between two responses: the clock, and a generated request id. */
const VARYING = new Set(['date', 'x-request-id'])

async function fetchAnswer (baseUrl: string, path: string, headers: Record<string, string>, method = 'GET'): Promise<Answer> {
  const response = await fetch(baseUrl + path, { method, headers })
  const kept: Record<string, string> = {}
  response.headers.forEach((value, name) => { if (!VARYING.has(name) || (name === 'x-request-id' && headers['x-request-id'] !== undefined)) kept[name] = value })
  return { status: response.status, headers: kept, body: await response.text() }
}

async function metricValue (baseUrl: string, name: string): Promise<number> {
  const text = await (await fetch(`${baseUrl}/metrics`)).text()
  return Number(new RegExp(`^${name} (\\d+)$`, 'm').exec(text)?.[1] ?? NaN)
}

/** Both servers of twoServers, over 45 animals of every status. */
async function twoServersWithAnimals (t: TestContext): Promise<{ hot: string, framework: string, auth: Record<string, string> }> {
  const { hot, framework } = await twoServers(t)
  for (let i = 1; i <= 45; i++) {
    const response = await fetch(`${hot.baseUrl}/v1/pets`, {
      method: 'POST',
      headers: { ...hot.auth, 'content-type': 'application/json' },
      body: JSON.stringify({ name: `animal ${i}`, categoryId: i, status: ['available', 'pending', 'sold'][i % 3] })
    })
    assert.equal(response.status, 201)
  }
  return { hot: hot.baseUrl, framework, auth: hot.auth }
}

describe('hot read path', () => {
  test('answers exactly as the framework does: status, headers and body, for valid and invalid reads alike', async (t) => {
    const { hot, framework, auth } = await twoServersWithAnimals(t)
    const first = await fetchAnswer(framework, '/v1/pets?limit=10', auth)
    const next = /<\/v1(\/pets\?[^>]+)>/.exec(first.headers.link ?? '')?.[1]
    const soldFirst = await fetchAnswer(framework, '/v1/pets?status=sold&limit=4', auth)
    const soldNext = /<\/v1(\/pets\?[^>]+)>/.exec(soldFirst.headers.link ?? '')?.[1]
    assert.ok(next !== undefined && soldNext !== undefined)
    const etag = first.headers.etag ?? ''
    const cases: Array<{ path: string, headers?: Record<string, string>, method?: string }> = [
      { path: '/v1/pets' },
      { path: '/v1/pets?limit=10' },
      { path: `/v1${next}` },
      { path: `/v1${soldNext}` },
      { path: '/v1/pets?status=pending' },
      { path: '/v1/pets?limit=100' },
      { path: '/v1/pets?limit=20&cursor=' + encodeURIComponent(/cursor=([^&>]+)/.exec(next)?.[1] ?? '') },
      { path: '/v1/pets?limit=10', headers: { 'if-none-match': etag } },
      { path: '/v1/pets?limit=10', headers: { 'if-none-match': '"other", ' + etag } },
      { path: '/v1/pets?limit=10', headers: { 'if-none-match': '"other"' } },
      { path: '/v1/pets?limit=10', headers: { 'x-request-id': 'client-chosen-id-1' } },
      { path: '/v1/pets?limit=10', headers: { traceparent: '00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01' } },
      // The tail page (short) and an empty page past the end.
      { path: '/v1/pets?limit=40' },
      { path: '/v1/pets?status=sold&limit=100' },
      // Forms the hot path leaves to the framework.
      { path: '/v1/pets?limit=0' },
      { path: '/v1/pets?limit=101' },
      { path: '/v1/pets?limit=020' },
      { path: '/v1/pets?limit=5&limit=6' },
      { path: '/v1/pets?status=lost' },
      { path: '/v1/pets?cursor=not-a-cursor' },
      { path: `/v1${next}`.replace('limit=10', 'limit=10&status=sold') },
      { path: '/v1/pets?limit=5&unknown=1' },
      { path: '/v1/pets?' },
      { path: '/v1/pets/' },
      { path: '/v1/pets/1' },
      { path: '/v1/pets/45' },
      { path: '/v1/pets/46' },
      { path: '/v1/pets/0' },
      { path: '/v1/pets/007' },
      { path: '/v1/pets/999999999999999' },
      { path: '/v1/pets/9223372036854775807' },
      { path: '/v1/pets/1', method: 'HEAD' },
      { path: '/v1/pets?limit=10', method: 'HEAD' },
      { path: '/v1/pets?limit=10', headers: { authorization: 'Bearer ask_000000000000000000000000000000000000000' } },
      { path: '/v1/pets?limit=10', headers: { authorization: '' } }
    ]
    for (const { path, headers = {}, method } of cases) {
      const sent = { ...auth, ...headers }
      // Twice: the first request with a key may verify it; the second finds it verified.
      for (let attempt = 0; attempt < 2; attempt++) {
        const expected = await fetchAnswer(framework, path, sent, method)
        const actual = await fetchAnswer(hot, path, sent, method)
        assert.deepEqual(actual, expected, `${method ?? 'GET'} ${path} ${JSON.stringify(headers)}`)
      }
    }
    assert.ok(await metricValue(hot, 'http_hot_read_answers_total') >= 20, 'the hot path answered the plain reads')
    assert.equal(await metricValue(framework, 'http_hot_read_answers_total'), 0)
  })

  test('a page read after every create is never stale', async (t) => {
    const server = await startServer(t)
    const list = async (query: string): Promise<Array<{ id: number }>> => await (await fetch(`${server.baseUrl}/v1/pets?${query}`, { headers: server.auth })).json() as Array<{ id: number }>
    for (let i = 1; i <= 30; i++) {
      const created = await fetch(`${server.baseUrl}/v1/pets`, {
        method: 'POST',
        headers: { ...server.auth, 'content-type': 'application/json' },
        body: JSON.stringify({ name: `animal ${i}`, categoryId: 1, status: 'sold' })
      })
      assert.equal(created.status, 201)
      for (const query of ['limit=20', 'limit=5', 'status=sold&limit=7', 'status=sold']) {
        const ids = (await list(query)).map((pet) => pet.id)
        const limit = Number(/limit=(\d+)/.exec(query)?.[1] ?? 20)
        assert.deepEqual(ids, Array.from({ length: Math.min(i, limit) }, (_, index) => index + 1), `${query} after ${i} creates`)
      }
      const pet = await fetch(`${server.baseUrl}/v1/pets/${i}`, { headers: server.auth })
      assert.equal(pet.status, 200)
    }
  })

  test('a revoked key is refused by the hot path within a second', async (t) => {
    const server = await startServer(t)
    const url = `${server.baseUrl}/v1/pets?limit=5`
    assert.equal((await fetch(url, { headers: server.auth })).status, 200)
    assert.equal((await fetch(url, { headers: server.auth })).status, 200)
    const account = await server.store.accounts.findByEmail('test@example.com')
    assert.ok(account)
    const [key] = await server.store.apiKeys.listByAccount(account.id)
    assert.ok(key)
    assert.equal(await server.store.apiKeys.revoke(key.id), 'revoked')
    const revokedAt = Date.now()
    let status = 200
    while (status === 200) {
      status = (await fetch(url, { headers: server.auth })).status
      if (status === 200) await new Promise((resolve) => setImmediate(resolve))
    }
    assert.equal(status, 401)
    assert.ok(Date.now() - revokedAt < 1000, `refused after ${Date.now() - revokedAt} ms`)
  })

  test('on one keep-alive connection, every request is judged by the key it sends', async (t) => {
    const server = await startServer(t)
    const agent = new Agent({ keepAlive: true, maxSockets: 1 })
    t.after(() => agent.destroy())
    const ask = async (method: 'GET' | 'POST', path: string, authorization: string): Promise<{ status: number, reused: boolean }> =>
      await new Promise((resolve, reject) => {
        const outgoing = httpRequest(`${server.baseUrl}${path}`, { method, agent, headers: { authorization, 'content-type': 'application/json' } }, (response) => {
          response.resume()
          response.on('end', () => resolve({ status: response.statusCode ?? 0, reused: outgoing.reusedSocket }))
        })
        outgoing.on('error', reject)
        outgoing.end(method === 'POST' ? '{"name":"Rex","categoryId":1}' : undefined)
      })
    const valid = server.auth.authorization ?? ''
    const unknown = `Bearer ask_${'x'.repeat(valid.length - 'Bearer ask_'.length)}`
    const answers = []
    for (const [method, path] of [['GET', '/v1/pets?limit=5'], ['GET', '/v1/pets/1'], ['POST', '/v1/pets']] as const) {
      answers.push(await ask('POST', '/v1/pets', valid), await ask(method, path, valid), await ask(method, path, unknown), await ask(method, path, valid))
    }
    assert.deepEqual(answers.map((answer) => answer.status), [201, 200, 401, 200, 201, 200, 401, 200, 201, 201, 401, 201])
    assert.ok(answers.slice(1).every((answer) => answer.reused), 'every request after the first went over the same connection')

    const account = await server.store.accounts.findByEmail('test@example.com')
    const [key] = account === undefined ? [] : await server.store.apiKeys.listByAccount(account.id)
    assert.ok(key)
    assert.equal(await server.store.apiKeys.revoke(key.id), 'revoked')
    const revokedAt = Date.now()
    let last = { status: 200, reused: true }
    while (last.status !== 401 && Date.now() - revokedAt < 2000) {
      last = await ask('GET', '/v1/pets?limit=5', valid)
      if (last.status !== 401) await new Promise((resolve) => setImmediate(resolve))
    }
    assert.equal(last.status, 401, 'the revoked key was still accepted 2 s after the revocation')
    assert.ok(last.reused, 'the refusal came over the same connection')
    assert.ok(Date.now() - revokedAt < 1000, `refused after ${Date.now() - revokedAt} ms`)
    assert.equal((await ask('POST', '/v1/pets', valid)).status, 401)
  })
})
