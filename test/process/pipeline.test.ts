import { describe, test, type TestContext } from 'node:test'
import assert from 'node:assert/strict'
import { pino } from 'pino'
import { appServices, serverOf } from '../../src/app.js'
import { loadConfig } from '../../src/config.js'
import { pipeline, type Step } from '../../src/http/pipeline.js'
import { createTestKey, openTestStore, TEST_DEFAULTS } from '../helpers/build-app.js'
import { eventually } from '../helpers/eventually.js'

/** A step that adds its name to the x-steps header as a request reaches it, and records each request it saw finish. */
function probe (name: string, scope: Step['scope'], finished: Map<string, Set<string>>): Step {
  const seen = new Set<string>()
  finished.set(name, seen)
  return {
    name,
    scope,
    onRequest: (exchange) => { exchange.header('x-steps', name); return undefined },
    onDone: (exchange) => { seen.add(exchange.id) }
  }
}

/**
 * The service on a real socket, its steps the list pipeline() returns with three more lines in
 * it, as CONTRIBUTING.md says a step is added: a step for every request right after the request
 * context, an api step right after authentication, and a step for every request right before the
 * handler. The server is assembled from that list exactly as buildApp assembles it from pipeline()'s.
 */
async function serveWithThreeMoreSteps (t: TestContext, finished: Map<string, Set<string>>): Promise<{ baseUrl: string, key: string }> {
  const { store } = await openTestStore(t)
  const services = await appServices({ config: loadConfig({ ...TEST_DEFAULTS }), store, logger: pino({ level: 'silent' }) })
  const steps = pipeline(services.pipelineDeps)
  const indexOf = (name: string): number => {
    const index = steps.findIndex((step) => step.name === name)
    assert.ok(index >= 0, `the pipeline has a step named ${name}`)
    return index
  }
  steps.splice(indexOf('request id and trace context') + 1, 0, probe('first', 'every request', finished))
  steps.splice(indexOf('authentication') + 1, 0, probe('api', 'api', finished))
  steps.splice(indexOf('handler'), 0, probe('last', 'every request', finished))
  const app = await serverOf(services, steps)
  t.after(() => app.close())
  const key = await createTestKey(store)
  await app.listen({ host: '127.0.0.1', port: 0 })
  const address = app.server.address()
  if (address === null || typeof address === 'string') throw new Error('the server has no TCP address')
  return { baseUrl: `http://127.0.0.1:${address.port}`, key }
}

describe('the request pipeline', () => {
  test('a step added to the list pipeline() returns runs for every route, in the order of the list: cached and uncached, answered or refused', { timeout: 60_000 }, async (t) => {
    const finished = new Map<string, Set<string>>()
    const { baseUrl, key } = await serveWithThreeMoreSteps(t, finished)
    const answered = new Map<string, string>()
    const sent = async (method: string, path: string, init: RequestInit): Promise<Response> => {
      const response = await fetch(baseUrl + path, { ...init, method, redirect: 'manual' })
      await response.arrayBuffer()
      answered.set(response.headers.get('x-request-id') ?? '', `${method} ${path}`)
      return response
    }
    const auth = { authorization: `Bearer ${key}` }
    const json = { ...auth, 'content-type': 'application/json' }
    for (let i = 0; i < 25; i++) {
      const created = await sent('POST', '/v1/pets', { headers: json, body: JSON.stringify({ name: `animal ${i}`, categoryId: i }) })
      assert.equal(created.status, 201)
    }

    // Each request meets the steps in list order until one answers it: the steps after that one do not see it.
    const all = 'first, api, last'
    const routed = 'first, api'
    const api: Array<[string, string, Record<string, string>, string | undefined, number, string]> = [
      ['GET', '/v1/pets?limit=5', auth, undefined, 200, all],
      ['GET', '/v1/pets?limit=5', auth, undefined, 200, all], // the same full page again, now from the cache
      ['GET', '/v1/pets', auth, undefined, 200, all], // the short tail page, never cached
      ['GET', '/v1/pets/3', auth, undefined, 200, all],
      ['GET', '/v1/pets/3', auth, undefined, 200, all], // cached
      ['HEAD', '/v1/pets/3', auth, undefined, 200, all],
      ['GET', '/v1/pets/999', auth, undefined, 404, all], // answered by the handler: no such animal
      ['POST', '/v1/pets', json, '{"name":"Rex","categoryId":1}', 201, all],
      ['GET', '/v1/store/orders', auth, undefined, 501, all],
      ['GET', '/v1/openapi.json', {}, undefined, 200, all],
      // Refused by validation, before the handler.
      ['GET', '/v1/pets/abc', auth, undefined, 400, routed],
      ['GET', '/v1/pets?limit=0', auth, undefined, 400, routed],
      ['POST', '/v1/pets', json, '{"name":""}', 400, routed],
      ['POST', '/v1/pets', { ...auth, 'content-type': 'text/plain' }, 'x', 415, routed],
      // Answered by routing: an unknown path, another method, OPTIONS.
      ['GET', '/v1/nope', auth, undefined, 404, routed],
      ['DELETE', '/v1/pets', auth, undefined, 405, routed],
      ['OPTIONS', '/v1/pets', auth, undefined, 204, routed],
      // Refused by authentication: only the step before it.
      ['GET', '/v1/pets', {}, undefined, 401, 'first'],
      ['POST', '/v1/pets', { 'content-type': 'application/json' }, '{}', 401, 'first'],
      ['GET', '/v1/nope', { authorization: 'Bearer ask_nope' }, undefined, 401, 'first']
    ]
    for (const [method, path, headers, body, status, steps] of api) {
      const response = await sent(method, path, { headers, body })
      assert.equal(response.status, status, `${method} ${path}`)
      assert.equal(response.headers.get('x-steps'), steps, `${method} ${path}: the steps ran in the list's order, up to the one that answered`)
    }

    // Outside /v1, api steps do not run; steps for every request do, up to the handler, which hands the request to the framework.
    for (const path of ['/healthz', '/readyz', '/metrics', '/docs', '/portal/login', '/nope']) {
      const response = await sent('GET', path, {})
      assert.equal(response.headers.get('x-steps'), 'first, last', path)
    }

    // Both steps for every request finished every request, whichever step answered it, refusals included.
    for (const name of ['first', 'last']) {
      const ran = finished.get(name) ?? new Set()
      // onDone follows the answer: it runs once each response is sent.
      await eventually(() => assert.deepEqual([...answered.keys()].filter((id) => !ran.has(id)).map((id) => answered.get(id)), [], name), { timeout: 10_000 })
    }
  })
})
