import { cpSync, readFileSync, symlinkSync, writeFileSync } from 'node:fs'
import { join } from 'node:path'
import { describe, test, type TestContext } from 'node:test'
import assert from 'node:assert/strict'
import { spawn } from 'node:child_process'
import { once } from 'node:events'
import { createInterface } from 'node:readline'
import { tempDir } from '../helpers/build-app.js'
import { dbFile, seedApiKey } from '../helpers/server-process.js'

const ROOT = join(import.meta.dirname, '..', '..')
const PIPELINE = join('src', 'http', 'pipeline.ts')

/**
 * A copy of the service whose pipeline list got three more lines, one edit in one file, as
 * CONTRIBUTING.md says a step is added: a step for every request right after the request
 * context, an api step right after authentication, and a step for every request right before the
 * handler. Each adds its name to a response header as the request reaches it, and logs a line
 * once the request is over.
 */
function serviceWithThreeMoreSteps (t: TestContext): string {
  const dir = tempDir(t)
  cpSync(join(ROOT, 'src'), join(dir, 'src'), { recursive: true })
  cpSync(join(ROOT, 'package.json'), join(dir, 'package.json'))
  symlinkSync(join(ROOT, 'node_modules'), join(dir, 'node_modules'), 'dir')
  const source = readFileSync(join(dir, PIPELINE), 'utf8')
  const step = (name: string, scope: string): string =>
    `{ name: '${name}', scope: '${scope}', onRequest: (exchange) => { exchange.header('x-steps', '${name}'); return undefined }, ` +
    `onDone: (exchange) => { deps.log.info({ step: '${name}', requestId: exchange.id, statusCode: exchange.statusCode }, 'step ran') } },`
  const edited = source
    .replace(/^(\s*)requestContext\(\),$/m, (line, indent: string) => `${line}\n${indent}${step('first', 'every request')}`)
    .replace(/^(\s*)authentication\([^)]*\),$/m, (line, indent: string) => `${line}\n${indent}${step('api', 'api')}`)
    .replace(/^(\s*)handler\(\),$/m, (line, indent: string) => `${indent}${step('last', 'every request')}\n${line}`)
  assert.equal(edited.split('\n').length, source.split('\n').length + 3, 'the pipeline list has the lines the test inserts beside')
  writeFileSync(join(dir, PIPELINE), edited)
  return dir
}

/** Log lines as they arrive, and a wait for a number of them. */
class LogLines extends Array<Record<string, unknown>> {
  private readonly waiters: Array<() => void> = []
  add (line: Record<string, unknown>): void {
    this.push(line)
    for (const waiter of this.waiters.splice(0)) waiter()
  }

  async whenCount (predicate: (line: Record<string, unknown>) => boolean, count: number): Promise<void> {
    while (this.filter(predicate).length < count) await new Promise<void>((resolve) => this.waiters.push(resolve))
  }
}

/** Serves the copy from its TypeScript sources; resolves with its base URL once it listens. `logs` collects its log lines. */
async function serve (t: TestContext, dir: string, databaseUrl: string, logs: LogLines): Promise<string> {
  const child = spawn(process.execPath, ['--import', 'tsx', join(dir, 'src', 'cli', 'main.ts'), 'serve'], {
    cwd: dir,
    env: { PATH: process.env.PATH ?? '', HOST: '127.0.0.1', PORT: '0', DATABASE_URL: databaseUrl, LOG_LEVEL: 'info', LOAD_SHED_EVENT_LOOP_DELAY_MS: '0', METRICS_TOKEN: 'pipeline-test-token-0123456789' },
    stdio: ['ignore', 'pipe', 'pipe']
  })
  t.after(async () => {
    if (child.exitCode === null && child.signalCode === null) {
      child.kill('SIGKILL')
      await once(child, 'exit')
    }
  })
  let stderr = ''
  child.stderr.setEncoding('utf8').on('data', (chunk: string) => { stderr += chunk })
  return await new Promise((resolve, reject) => {
    createInterface({ input: child.stdout }).on('line', (line) => {
      try {
        logs.add(JSON.parse(line) as Record<string, unknown>)
      } catch {}
      const address = /listening (?:at|on) (http:\/\/127\.0\.0\.1:\d+)/.exec(line)?.[1]
      if (address !== undefined) resolve(address)
    })
    child.once('exit', (code) => reject(new Error(`the service exited with ${String(code)}: ${stderr}`)))
  })
}

describe('the request pipeline', () => {
  test('a step added to the list in src/http/pipeline.ts runs for every route, in the order of the list: cached and uncached, answered or refused', { timeout: 60_000 }, async (t) => {
    const dir = serviceWithThreeMoreSteps(t)
    const dbPath = dbFile(tempDir(t))
    const key = await seedApiKey(dbPath)
    const logs = new LogLines()
    const baseUrl = await serve(t, dir, `sqlite:${dbPath}`, logs)
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
      const ran = (): Set<string> => new Set(logs.filter((line) => line.step === name).map((line) => String(line.requestId)))
      // The lines follow the answers: they are written once each response is sent.
      await Promise.race([logs.whenCount((line) => line.step === name, answered.size), new Promise((resolve) => setTimeout(resolve, 10_000))])
      assert.deepEqual([...answered.keys()].filter((id) => !ran().has(id)).map((id) => answered.get(id)), [], name)
    }
  })
})
