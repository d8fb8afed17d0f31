import { describe, test, type TestContext } from 'node:test'
import assert from 'node:assert/strict'
import { createTestSchema, postgresAvailable } from '../helpers/postgres.js'
import { launchServer } from '../helpers/server-process.js'
import { runCli } from '../helpers/spawn-cli.js'

interface Pet { id: number, name: string, categoryId: number, status?: string }

async function twoInstances (t: TestContext): Promise<{ urls: [string, string], key: string, env: Record<string, string> } | undefined> {
  if (!await postgresAvailable()) {
    t.skip('PostgreSQL is not reachable')
    return undefined
  }
  const env = { PATH: process.env.PATH ?? '', DATABASE_URL: await createTestSchema(t), LOG_LEVEL: 'warn' }
  assert.equal((await runCli(['accounts', 'create', '--email', 'ops@example.com'], env)).code, 0)
  const created = await runCli(['keys', 'create', '--email', 'ops@example.com'], env)
  assert.equal(created.code, 0, created.stderr)
  const key = created.stdout.trim().split('\n').at(-1) ?? ''
  // Both instances start at once on an empty schema: migrations must take turns.
  const first = launchServer(t, { ...env, LOG_LEVEL: 'info' })
  const second = launchServer(t, { ...env, LOG_LEVEL: 'info' })
  return { urls: [await first.listening, await second.listening], key, env }
}

describe('two instances on one PostgreSQL database', () => {
  test('share ids, pages, keys and revocations', { timeout: 120_000 }, async (t) => {
    const setup = await twoInstances(t)
    if (!setup) return
    const { urls, key, env } = setup
    const auth = { authorization: `Bearer ${key}` }

    const creates = await Promise.all(Array.from({ length: 60 }, async (_, i) => {
      const response = await fetch(`${urls[i % 2]}/v1/pets`, {
        method: 'POST',
        headers: { ...auth, 'content-type': 'application/json' },
        // Written by hand: JSON.stringify would round a categoryId beyond 2^53.
        body: `{"name":"pet ${i}","categoryId":${9007199254740993n + BigInt(i)}${i % 3 === 0 ? ',"status":"sold"' : ''}}`
      })
      assert.equal(response.status, 201, await response.clone().text())
      return await response.json() as Pet
    }))
    const ids = creates.map((pet) => pet.id)
    assert.equal(new Set(ids).size, ids.length, 'ids are unique across instances')

    for (const status of [undefined, 'sold']) {
      const seen: number[] = []
      let path: string | undefined = `/v1/pets?limit=7${status ? `&status=${status}` : ''}`
      for (let page = 0; path !== undefined; page++) {
        const response: Response = await fetch(`${urls[page % 2]}${path}`, { headers: auth })
        assert.equal(response.status, 200, await response.clone().text())
        seen.push(...(await response.json() as Pet[]).map((pet) => pet.id))
        path = /^<([^>]+)>; rel="next"$/.exec(response.headers.get('link') ?? '')?.[1]
        assert.ok(page < 30)
      }
      const expected = creates.filter((pet) => status === undefined || pet.status === status).map((pet) => pet.id).sort((a, b) => a - b)
      assert.deepEqual(seen, expected, `pages served alternately by both instances, status ${status}`)
    }

    const exact = await (await fetch(`${urls[1]}/v1/pets/${creates[0]?.id}`, { headers: auth })).text()
    assert.match(exact, /"categoryId":9007199254740993[,}]/, 'int64 survives PostgreSQL')

    const retries = await Promise.all(urls.concat(urls).map(async (url) => {
      const response = await fetch(`${url}/v1/pets`, {
        method: 'POST',
        headers: { ...auth, 'content-type': 'application/json', 'idempotency-key': 'same-order-everywhere' },
        body: '{"name":"once","categoryId":5}'
      })
      return { status: response.status, location: response.headers.get('location') }
    }))
    const succeeded = retries.filter((retry) => retry.status === 201)
    assert.ok(succeeded.length >= 1 && retries.every((retry) => retry.status === 201 || retry.status === 409), JSON.stringify(retries))
    assert.equal(new Set(succeeded.map((retry) => retry.location)).size, 1, 'one animal for one Idempotency-Key, whichever instance answers')
    const replay = await fetch(`${urls[1]}/v1/pets`, {
      method: 'POST',
      headers: { ...auth, 'content-type': 'application/json', 'idempotency-key': 'same-order-everywhere' },
      body: '{"name":"once","categoryId":5}'
    })
    assert.equal(replay.headers.get('location'), succeeded[0]?.location)

    const listed = await runCli(['keys', 'list', '--email', 'ops@example.com', '--json'], env)
    const [keyRow] = JSON.parse(listed.stdout) as Array<{ id: string }>
    assert.ok(keyRow)
    const revoked = await runCli(['keys', 'revoke', keyRow.id], env)
    assert.equal(revoked.code, 0, revoked.stderr)
    const revokedAt = Date.now()
    for (const url of urls) {
      let status = 200
      while (status !== 401) {
        status = (await fetch(`${url}/v1/pets?limit=1`, { headers: auth })).status
        assert.ok(Date.now() - revokedAt < 1000 || status === 401, `${url} still accepts the revoked key after 1 s`)
      }
    }
    assert.ok(Date.now() - revokedAt < 1000, `revocation took ${Date.now() - revokedAt} ms to reach both instances`)
  })
})
