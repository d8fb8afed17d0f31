import { describe, test } from 'node:test'
import assert from 'node:assert/strict'
import { once } from 'node:events'
import { request as httpRequest } from 'node:http'
import { generateApiKey } from '../../src/core/api-keys.js'
import { tempDir } from '../helpers/build-app.js'
import { dbFile, launchServer, seedApiKey } from '../helpers/server-process.js'
import { cliEnv } from '../helpers/spawn-cli.js'

interface NewPet { name: string, categoryId: number, status?: 'available' | 'pending' | 'sold' }
interface Pet extends NewPet { id: number }

const STATUSES = ['available', 'pending', 'sold', undefined] as const
const SHUTDOWN_LIMIT_MS = 10_000

function newPet (label: string): NewPet {
  const status = STATUSES[Math.floor(Math.random() * STATUSES.length)]
  return {
    name: `${label} ✓ Fëlix 🐈 "quoted"`,
    categoryId: Math.floor(Math.random() * 1e12) - 5e11,
    ...(status !== undefined && { status })
  }
}

async function getPet (baseUrl: string, key: string, id: number): Promise<{ status: number, body: unknown }> {
  const response = await fetch(`${baseUrl}/v1/pets/${id}`, { headers: { authorization: `Bearer ${key}` } })
  return { status: response.status, body: await response.json() }
}

/** Asserts that every acknowledged animal is served with identical content. */
async function assertAllPresent (baseUrl: string, key: string, acknowledged: Pet[], context: string): Promise<void> {
  const queue = [...acknowledged]
  const missing: string[] = []
  await Promise.all(Array.from({ length: 8 }, async () => {
    for (let pet = queue.shift(); pet !== undefined; pet = queue.shift()) {
      const { status, body } = await getPet(baseUrl, key, pet.id)
      if (status !== 200) {
        missing.push(`#${pet.id}: ${status} ${JSON.stringify(body)}`)
        continue
      }
      try {
        assert.deepEqual(body, pet)
      } catch {
        missing.push(`#${pet.id}: expected ${JSON.stringify(pet)}, got ${JSON.stringify(body)}`)
      }
    }
  }))
  assert.deepEqual(missing, [], `${context}: ${missing.length} of ${acknowledged.length} acknowledged animals are missing or changed`)
}

/**
 * A POST /v1/pets sent with `Expect: 100-continue`: `continued` resolves once the server
 * has parsed the request head and started serving it, and the body is only sent by
 * `finish`, so the request is provably in flight in between.
 */
function slowCreate (baseUrl: string, key: string, pet: NewPet): { continued: Promise<unknown>, finish: () => void, response: Promise<{ status: number, body: string }> } {
  const body = JSON.stringify(pet)
  const request = httpRequest(`${baseUrl}/v1/pets`, {
    method: 'POST',
    headers: {
      authorization: `Bearer ${key}`,
      'content-type': 'application/json',
      'content-length': String(Buffer.byteLength(body)),
      expect: '100-continue'
    }
  })
  const continued = once(request, 'continue')
  const response = new Promise<{ status: number, body: string }>((resolve, reject) => {
    request.once('error', reject)
    request.once('response', (res) => {
      let text = ''
      res.setEncoding('utf8').on('data', (chunk: string) => { text += chunk })
      res.once('end', () => resolve({ status: res.statusCode ?? 0, body: text }))
      res.once('error', reject)
    })
  })
  response.catch(() => {})
  request.flushHeaders()
  return { continued, finish: () => { request.end(body) }, response }
}

describe('animal-store serve process', () => {
  describe('configuration', () => {
    // The PostgreSQL URLs name no reachable server: the configuration must stop the start before any connection.
    const bad: Array<[string, string, string, Record<string, string>?]> = [
      ['PORT', 'abc', 'PORT'],
      ['DATABASE_URL', 'mysql://x', 'DATABASE_URL'],
      ['DATABASE_URL', 'postgres://127.0.0.1:9/animals,', 'DATABASE_URL'],
      ['DATABASE_REPLICA_URLS', 'postgres://127.0.0.1:99999/animals', 'DATABASE_REPLICA_URLS', { DATABASE_URL: 'postgres://127.0.0.1:9/animals' }]
    ]
    for (const [variable, value, named, extra] of bad) {
      test(`exits 1 with a message naming ${variable} when ${variable}=${value}`, { timeout: 60_000 }, async (t) => {
        const dir = tempDir(t)
        const server = launchServer(t, { ...cliEnv(dbFile(dir)), ...extra, [variable]: value })
        await assert.rejects(server.listening, /server exited \(1\)/)
        assert.deepEqual(await server.exited, { code: 1, signal: null })
        const output = `${server.stderr()}\n${server.lines.join('\n')}`
        assert.match(output, new RegExp(`${named}=`), output)
        assert.doesNotMatch(output, /\n\s+at /, 'no stack trace')
      })
    }
  })

  describe('shutdown', () => {
    test('SIGTERM lets requests in flight finish with 201, exits 0 within 10 s, and the animals survive a restart', { timeout: 60_000 }, async (t) => {
      const dir = tempDir(t)
      const env = cliEnv(dbFile(dir))
      const key = await seedApiKey(dbFile(dir))
      const server = launchServer(t, env)
      const baseUrl = await server.listening

      const pets = Array.from({ length: 4 }, (_, i) => newPet(`in flight ${i}`))
      const inFlight = pets.map((pet) => slowCreate(baseUrl, key, pet))
      await Promise.all(inFlight.map((request) => request.continued))

      const signalledAt = performance.now()
      server.child.kill('SIGTERM')
      await server.waitForLog((entry) => typeof entry.msg === 'string' && entry.msg.startsWith('shutting down'))
      assert.equal(server.child.exitCode, null, 'the server must wait for the requests in flight')
      for (const request of inFlight) request.finish()

      const responses = await Promise.all(inFlight.map(async (request) => request.response))
      const created: Pet[] = []
      responses.forEach((response, i) => {
        assert.equal(response.status, 201, response.body)
        const pet = JSON.parse(response.body) as Pet
        assert.deepEqual(pet, { id: pet.id, ...pets[i] }, response.body)
        created.push(pet)
      })

      const exit = await server.exited
      const stoppedAfter = performance.now() - signalledAt
      assert.deepEqual(exit, { code: 0, signal: null }, server.stderr())
      assert.ok(stoppedAfter < SHUTDOWN_LIMIT_MS, `shutdown took ${Math.round(stoppedAfter)} ms`)

      const restarted = launchServer(t, env)
      const restartedUrl = await restarted.listening
      await assertAllPresent(restartedUrl, key, created, 'after restart')
      const list = await fetch(`${restartedUrl}/v1/pets`, { headers: { authorization: `Bearer ${key}` } })
      assert.deepEqual(await list.json(), [...created].sort((a, b) => a.id - b.id))
    })

    for (const signal of ['SIGINT', 'SIGTERM'] as const) {
      test(`${signal} sent as soon as the server logs that it listens makes it exit 0`, { timeout: 60_000 }, async (t) => {
        const dir = tempDir(t)
        const server = launchServer(t, cliEnv(dbFile(dir)))
        await server.listening
        const signalledAt = performance.now()
        server.child.kill(signal)
        assert.deepEqual(await server.exited, { code: 0, signal: null }, `${server.stderr()}\n${server.lines.join('\n')}`)
        assert.ok(performance.now() - signalledAt < SHUTDOWN_LIMIT_MS)
        await server.waitForLog((entry) => entry.msg === 'stopped')
      })
    }
  })

  describe('logs', () => {
    test('every log line is JSON, request lines carry requestId, and no line holds a key or the Authorization header', { timeout: 60_000 }, async (t) => {
      const dir = tempDir(t)
      const key = await seedApiKey(dbFile(dir))
      const unknownKey = generateApiKey().key
      const server = launchServer(t, cliEnv(dbFile(dir), { LOG_LEVEL: 'trace' }))
      const baseUrl = await server.listening

      const requests: Array<[string, RequestInit]> = [
        ['/v1/pets', { headers: { authorization: `Bearer ${key}`, 'x-request-id': 'trace-abc-1' } }],
        ['/v1/pets', { method: 'POST', headers: { authorization: `Bearer ${key}`, 'content-type': 'application/json' }, body: JSON.stringify({ name: 'Logged', categoryId: 3 }) }],
        ['/v1/pets', { method: 'POST', headers: { authorization: `bearer ${key}`, 'content-type': 'application/json' }, body: '{"name": ' }],
        ['/v1/pets/999', { headers: { authorization: `Bearer ${key}` } }],
        ['/v1/pets', { headers: { authorization: `Bearer ${unknownKey}` } }],
        ['/v1/store/orders', { headers: { authorization: `Basic ${Buffer.from(`me:${key}`).toString('base64')}` } }],
        ['/v1/nope', {}]
      ]
      const requestIds: string[] = []
      for (const [path, init] of requests) {
        const response = await fetch(`${baseUrl}${path}`, init)
        await response.arrayBuffer()
        const id = response.headers.get('x-request-id')
        assert.ok(id, `${path} has no x-request-id`)
        requestIds.push(id)
      }
      assert.equal(requestIds[0], 'trace-abc-1')

      server.child.kill('SIGTERM')
      assert.deepEqual(await server.exited, { code: 0, signal: null }, server.stderr())

      const secrets = [key, key.slice(12), unknownKey, unknownKey.slice(12), Buffer.from(`me:${key}`).toString('base64')]
      for (const line of [...server.lines, ...server.stderr().split('\n')]) {
        for (const secret of secrets) assert.ok(!line.includes(secret), `a log line holds a secret: ${line}`)
        assert.doesNotMatch(line, /bearer\s+ask_|basic\s+[A-Za-z0-9+/=]{8,}/i, `a log line holds an Authorization value: ${line}`)
      }
      assert.ok(server.lines.length > 0)
      for (const line of server.lines) {
        let entry: unknown
        assert.doesNotThrow(() => { entry = JSON.parse(line) }, `not a JSON log line: ${line}`)
        assert.ok(typeof entry === 'object' && entry !== null && !Array.isArray(entry), `not a JSON object: ${line}`)
      }
      const requestLines = server.logs.filter((entry) =>
        ['req', 'res', 'url', 'method', 'statusCode', 'reqId', 'requestId'].some((field) => field in entry))
      for (const entry of requestLines) {
        assert.ok(typeof entry.requestId === 'string' && entry.requestId !== '', `a request log line has no requestId: ${JSON.stringify(entry)}`)
      }
      t.diagnostic(`${server.lines.length} log lines, ${requestLines.length} of them about a request`)
      const completed = server.logs.filter((entry) => entry.msg === 'request completed')
      assert.deepEqual(completed.map((entry) => entry.requestId), requestIds, JSON.stringify(completed))
    })
  })
})
