import { describe, test, type TestContext } from 'node:test'
import assert from 'node:assert/strict'
import { randomUUID } from 'node:crypto'
import { get } from 'node:http'
import { tempDir } from '../helpers/build-app.js'
import { eventually } from '../helpers/eventually.js'
import { createTestSchema, postgresAvailable } from '../helpers/postgres.js'
import { dbFile, launchServer, seedApiKey, type ServerHandle } from '../helpers/server-process.js'
import { cliEnv, runCli } from '../helpers/spawn-cli.js'

interface Pet { id: number, name: string, categoryId: number }
type LogEntry = Record<string, unknown>

const CREATES = 200

/** Starts `serve` with WEB_CONCURRENCY=2 and waits until both workers listen; returns the URL and the worker pids. */
async function startCluster (t: TestContext, env: Record<string, string>): Promise<{ server: ServerHandle, baseUrl: string, workerPids: number[] }> {
  const server = launchServer(t, { ...env, WEB_CONCURRENCY: '2', LOG_LEVEL: 'info' })
  const baseUrl = await server.listening
  const first = await server.waitForLog(isListening)
  await server.waitForLog((entry) => isListening(entry) && entry.pid !== first.pid)
  // Lines reach stdout in batches, at the latest after the logger's flush interval: wait for both, not just look.
  const started = await server.waitForLog((entry) => entry.msg === 'worker started')
  const startedToo = await server.waitForLog((entry) => entry.msg === 'worker started' && entry.workerPid !== started.workerPid)
  const workerPids = [started, startedToo].map((entry) => entry.workerPid as number)
  assert.equal(new Set(workerPids).size, 2, server.lines.join('\n'))
  assert.ok(!workerPids.includes(server.child.pid as number), 'the primary serves no requests itself')
  return { server, baseUrl, workerPids }
}

const isListening = (entry: LogEntry): boolean => typeof entry.msg === 'string' && entry.msg.startsWith('Animal Store listening on ')

/** A GET on a connection of its own (so the cluster hands it to the next worker in turn), with a request id of our choosing. */
async function getOnNewConnection (url: string, key: string, requestId: string): Promise<number> {
  return new Promise((resolve, reject) => {
    get(url, { agent: false, headers: { authorization: `Bearer ${key}`, 'x-request-id': requestId } }, (response) => {
      response.resume()
      response.once('end', () => resolve(response.statusCode ?? 0))
    }).once('error', reject)
  })
}

/** SIGTERM to the primary: it exits 0 and takes every worker with it. */
async function stopCluster (server: ServerHandle, workerPids: number[]): Promise<void> {
  server.child.kill('SIGTERM')
  assert.deepEqual(await server.exited, { code: 0, signal: null }, `${server.stderr()}\n${server.lines.join('\n')}`)
  for (const pid of workerPids) assert.throws(() => process.kill(pid, 0), { code: 'ESRCH' }, `worker ${pid} is still running`)
}

/** 200 concurrent creates, all 201 with unique ids, all listed, answered by both workers; then a clean stop. */
async function createAndList (t: TestContext, env: Record<string, string>, key: string): Promise<void> {
  const { server, baseUrl, workerPids } = await startCluster(t, env)
  const auth = { authorization: `Bearer ${key}` }

  const created = await Promise.all(Array.from({ length: CREATES }, async (_, i) => {
    const response = await fetch(`${baseUrl}/v1/pets`, {
      method: 'POST',
      headers: { ...auth, 'content-type': 'application/json' },
      body: JSON.stringify({ name: `pet ${i}`, categoryId: i })
    })
    assert.equal(response.status, 201, await response.clone().text())
    return await response.json() as Pet
  }))
  const ids = created.map((pet) => pet.id).sort((a, b) => a - b)
  assert.equal(new Set(ids).size, CREATES, 'ids are unique across workers')

  const listed: number[] = []
  for (let path: string | undefined = '/v1/pets?limit=100', page = 0; path !== undefined; page++) {
    const response: Response = await fetch(`${baseUrl}${path}`, { headers: auth })
    assert.equal(response.status, 200, await response.clone().text())
    listed.push(...(await response.json() as Pet[]).map((pet) => pet.id))
    path = /^<([^>]+)>; rel="next"$/.exec(response.headers.get('link') ?? '')?.[1]
    assert.ok(page < 10)
  }
  assert.deepEqual(listed, ids, 'the list holds every animal created')

  // Both workers answered creates: each logs a create's access line (within its logger's flush interval).
  for (const pid of workerPids) await server.waitForLog((entry) => entry.msg === 'request completed' && entry.method === 'POST' && entry.pid === pid)
  await stopCluster(server, workerPids)
}

describe('WEB_CONCURRENCY=2: one primary, two workers on one port', () => {
  test('SQLite: concurrent creates from both workers are all stored and listed; SIGTERM stops everything with 0', { timeout: 60_000 }, async (t) => {
    const dir = tempDir(t)
    const key = await seedApiKey(dbFile(dir))
    await createAndList(t, cliEnv(dbFile(dir)), key)
  })

  test('a worker killed with SIGKILL is replaced and the service keeps answering', { timeout: 60_000 }, async (t) => {
    const dir = tempDir(t)
    const key = await seedApiKey(dbFile(dir))
    const { server, baseUrl, workerPids } = await startCluster(t, cliEnv(dbFile(dir)))
    const [victim, survivor] = workerPids as [number, number]

    process.kill(victim, 'SIGKILL')
    const died = await server.waitForLog((entry) => entry.msg === 'worker died; starting a replacement')
    assert.equal(died.workerPid, victim)
    assert.equal(died.signal, 'SIGKILL')
    await eventually(async () =>
      assert.equal(await getOnNewConnection(`${baseUrl}/v1/pets?limit=1`, key, randomUUID()), 200, 'a request succeeds after the kill'), { timeout: 10_000, interval: 0 })

    const started = await server.waitForLog((entry) => entry.msg === 'worker started' && entry.workerPid !== victim && entry.workerPid !== survivor)
    const replacement = started.workerPid as number
    await server.waitForLog((entry) => isListening(entry) && entry.pid === replacement)
    // New connections go to the workers in turn: within a few, one reaches the replacement.
    await eventually(async () => {
      const requestId = randomUUID()
      assert.equal(await getOnNewConnection(`${baseUrl}/v1/pets?limit=1`, key, requestId), 200)
      const line = await server.waitForLog((entry) => entry.requestId === requestId)
      assert.equal(line.pid, replacement, 'the replacement answers a request')
    }, { timeout: 10_000, interval: 0 })
    await stopCluster(server, [survivor, replacement])
  })

  test('PostgreSQL: concurrent creates from both workers are all stored and listed; SIGTERM stops everything with 0', { timeout: 60_000 }, async (t) => {
    if (!await postgresAvailable()) {
      t.skip('PostgreSQL is not reachable')
      return
    }
    const env = { PATH: process.env.PATH ?? '', DATABASE_URL: await createTestSchema(t), LOG_LEVEL: 'warn' }
    assert.equal((await runCli(['accounts', 'create', '--email', 'ops@example.com'], env)).code, 0)
    const created = await runCli(['keys', 'create', '--email', 'ops@example.com'], env)
    assert.equal(created.code, 0, created.stderr)
    await createAndList(t, env, created.stdout.trim().split('\n').at(-1) ?? '')
  })
})
