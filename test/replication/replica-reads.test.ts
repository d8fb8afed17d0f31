import { describe, test } from 'node:test'
import assert from 'node:assert/strict'
import { createCursorCodec } from '../../src/core/cursor.js'
import { createApiKey } from '../../src/services/accounts.js'
import { createTestKey, METRICS_AUTH } from '../helpers/build-app.js'
import { startReplicatedPair } from '../helpers/pg-cluster.js'
import { replicaInUse, replicaReads, startInstance, type Instance } from '../helpers/replication.js'

interface Pet { id: number, name: string, categoryId: number, status?: string }

const animals = (count: number, from = 1): Array<{ name: string, categoryId: bigint, status: 'available' }> =>
  Array.from({ length: count }, (_, i) => ({ name: `animal ${from + i}`, categoryId: BigInt((i % 50) + 1), status: 'available' as const }))

async function create (instance: Instance, auth: Record<string, string>, name: string): Promise<Pet> {
  const response = await fetch(`${instance.baseUrl}/v1/pets`, {
    method: 'POST',
    headers: { ...auth, 'content-type': 'application/json' },
    body: JSON.stringify({ name, categoryId: 7 })
  })
  assert.equal(response.status, 201, await response.clone().text())
  return await response.json() as Pet
}

const nextLink = (response: Response): string | undefined => /^<([^>]+)>; rel="next"$/.exec(response.headers.get('link') ?? '')?.[1]

describe('reads from a PostgreSQL hot standby', () => {
  test('a paging walk over 10,000 animals while creates continue, pages served alternately by an instance reading from the replica and one reading from the primary, sees every animal once, in id order', { timeout: 180_000 }, async (t) => {
    // The standby applies each commit 50 ms late: the tail the walk reaches is often not on it yet.
    const pair = await startReplicatedPair(t, { applyDelayMs: 50 })
    if (pair === undefined) return t.skip('PostgreSQL server binaries are missing')
    const onPrimary = await startInstance(t, [pair.primary.url])
    await onPrimary.store.pets.insertMany(animals(10_000))
    const onReplica = await startInstance(t, [pair.primary.url], { replicaUrls: [pair.standby.url] })
    const auth = { authorization: `Bearer ${await createTestKey(onPrimary.store)}` }
    await replicaInUse(onReplica.store)

    const creating = { on: true }
    const acknowledged: number[] = []
    const creators = Array.from({ length: 2 }, async (_, worker) => {
      for (let n = 0; creating.on; n++) acknowledged.push((await create(worker % 2 === 0 ? onPrimary : onReplica, auth, `created ${worker}.${n}`)).id)
    })

    const seen: number[] = []
    let ackedBeforeLastPage = 0
    let lastPage = ''
    try {
      let path: string | undefined = '/v1/pets?limit=100'
      for (let page = 0; path !== undefined; page++) {
        assert.ok(page < 1000, 'the walk reaches the tail')
        ackedBeforeLastPage = Math.max(0, ...acknowledged)
        lastPage = path
        const response: Response = await fetch(`${(page % 2 === 0 ? onReplica : onPrimary).baseUrl}${path}`, { headers: auth })
        assert.equal(response.status, 200, await response.clone().text())
        seen.push(...(await response.json() as Pet[]).map((pet) => pet.id))
        path = nextLink(response)
      }
    } finally {
      creating.on = false
      await Promise.all(creators)
    }
    // The tail, now that creates have stopped: the same on both, though the standby applies the last creates 50 ms late.
    const tails = await Promise.all([onReplica, onPrimary].map(async (instance) => await (await fetch(`${instance.baseUrl}${lastPage}`, { headers: auth })).text()))
    assert.equal(tails[0], tails[1])

    assert.ok(seen.length > 10_000, `the walk saw ${seen.length} animals`)
    assert.ok(seen.every((id, index) => id === index + 1), 'every animal exactly once, in id order, none skipped')
    assert.ok((seen.at(-1) ?? 0) >= ackedBeforeLastPage, 'every animal created before the last page was read is in the walk')
    const reads = replicaReads(onReplica.store)
    assert.ok(reads.replica > 10, `the replica answered pages (${JSON.stringify(reads)})`)
    assert.ok(reads.primary > 0, `the short tail page was read again on the primary (${JSON.stringify(reads)})`)
    t.diagnostic(`walked ${seen.length} animals while ${acknowledged.length} were created; catalogue reads of the replica instance: ${JSON.stringify(reads)}`)
  })

  test('a create on any instance is read at once on any other, by id and in a list, although the replica applies commits 300 ms late', { timeout: 120_000 }, async (t) => {
    const pair = await startReplicatedPair(t, { applyDelayMs: 300 })
    if (pair === undefined) return t.skip('PostgreSQL server binaries are missing')
    const onPrimary = await startInstance(t, [pair.primary.url])
    await onPrimary.store.pets.insertMany(animals(100))
    const instances = [
      onPrimary,
      await startInstance(t, [pair.primary.url], { replicaUrls: [pair.standby.url] }),
      await startInstance(t, [pair.primary.url], { replicaUrls: [pair.standby.url] })
    ]
    const auth = { authorization: `Bearer ${await createTestKey(onPrimary.store)}` }
    await Promise.all(instances.slice(1).map(async (instance) => await replicaInUse(instance.store)))
    const cursors = createCursorCodec(await onPrimary.store.setting('cursor_secret', () => 'created by the service already'))

    let missingOnStandby = 0
    await Promise.all(Array.from({ length: 6 }, async (_, worker) => {
      for (let round = 0; round < 5; round++) {
        const writer = instances[(worker + round) % 3] as Instance
        const reader = instances[(worker + round + 1 + (worker % 2)) % 3] as Instance
        const pet = await create(writer, auth, `fresh ${worker}.${round}`)
        if ((await pair.standby.query('SELECT 1 FROM pets WHERE id = $1', [pet.id])).length === 0) missingOnStandby++

        const byId = await fetch(`${reader.baseUrl}/v1/pets/${pet.id}`, { headers: auth })
        assert.equal(byId.status, 200, `animal ${pet.id} read on another instance at once`)
        assert.deepEqual(await byId.json(), pet)
        const cursor = cursors.encode({ afterId: pet.id - 1, status: undefined })
        const list = await fetch(`${reader.baseUrl}/v1/pets?limit=5&cursor=${cursor}`, { headers: auth })
        assert.equal(list.status, 200)
        assert.deepEqual((await list.json() as Pet[])[0], pet, `animal ${pet.id} leads the page that starts after ${pet.id - 1}`)
      }
    }))
    assert.ok(missingOnStandby > 0, 'the standby lagged behind creates, so reads had to be confirmed on the primary')
    const reads = instances.slice(1).map((instance) => replicaReads(instance.store))
    t.diagnostic(`${missingOnStandby} of 30 new animals were not yet on the standby when read; reads of the replica instances: ${JSON.stringify(reads)}`)
  })

  test('a replica stopped mid-run costs clients nothing; /readyz and /metrics show the primary and the replica\'s lag, then that it is down', { timeout: 120_000 }, async (t) => {
    const pair = await startReplicatedPair(t)
    if (pair === undefined) return t.skip('PostgreSQL server binaries are missing')
    const warnings: string[] = []
    const onReplica = await startInstance(t, [pair.primary.url], { replicaUrls: [pair.standby.url], onWarning: (message) => warnings.push(message) })
    await onReplica.store.pets.insertMany(animals(800))
    const auth = { authorization: `Bearer ${await createTestKey(onReplica.store)}` }
    await replicaInUse(onReplica.store)
    const primaryHost = `127.0.0.1:${pair.primary.port}/postgres`
    const standbyHost = `127.0.0.1:${pair.standby.port}/postgres`

    const ready = await (await fetch(`${onReplica.baseUrl}/readyz`)).json() as { status: string, database: { primary: string }, replicas: Array<{ host: string, state: string, lagMs: number }> }
    assert.equal(ready.status, 'ready')
    assert.equal(ready.database.primary, primaryHost)
    assert.equal(ready.replicas[0]?.host, standbyHost)
    assert.equal(ready.replicas[0]?.state, 'in use')
    assert.equal(typeof ready.replicas[0]?.lagMs, 'number')
    const metrics = await (await fetch(`${onReplica.baseUrl}/metrics`, { headers: METRICS_AUTH })).text()
    assert.match(metrics, new RegExp(`^db_primary\\{host="${primaryHost}",timeline="1"\\} 1$`, 'm'))
    assert.match(metrics, new RegExp(`^db_replica_lag_seconds\\{host="${standbyHost}"\\} [0-9.e-]+$`, 'm'))
    assert.match(metrics, new RegExp(`^db_replica_in_use\\{host="${standbyHost}"\\} 1$`, 'm'))

    // Each id and each page start is read once, so every read reaches the database.
    const cursors = createCursorCodec(await onReplica.store.setting('cursor_secret', () => 'created by the service already'))
    let next = 1
    let stopped: Promise<void> | undefined
    let atStop = { replica: 0, confirmed: 0, primary: 0 }
    await Promise.all(Array.from({ length: 8 }, async () => {
      for (let id = next++; id <= 800; id = next++) {
        const pet = await fetch(`${onReplica.baseUrl}/v1/pets/${id}`, { headers: auth })
        assert.equal(pet.status, 200, `animal ${id}: ${await pet.clone().text()}`)
        const page = await fetch(`${onReplica.baseUrl}/v1/pets?limit=20&cursor=${cursors.encode({ afterId: id, status: undefined })}`, { headers: auth })
        assert.equal(page.status, 200, `page after ${id}: ${await page.clone().text()}`)
        if (id === 250) {
          atStop = { ...replicaReads(onReplica.store) }
          stopped = pair.standby.stop('immediate')
        }
      }
    }))
    await stopped
    const after = replicaReads(onReplica.store)
    assert.ok(atStop.replica > 50, `the replica answered reads before it stopped (${JSON.stringify(atStop)})`)
    assert.ok(after.primary - atStop.primary > 500, `the primary answered once the replica had stopped (${JSON.stringify(after)})`)

    const readyAfter = await fetch(`${onReplica.baseUrl}/readyz`)
    assert.equal(readyAfter.status, 200, 'a replica down leaves the service ready')
    assert.equal((await readyAfter.json() as typeof ready).replicas[0]?.state, 'down')
    assert.match(await (await fetch(`${onReplica.baseUrl}/metrics`, { headers: METRICS_AUTH })).text(), new RegExp(`^db_replica_in_use\\{host="${standbyHost}"\\} 0$`, 'm'))
    for (const deadline = Date.now() + 10_000; !warnings.some((message) => message.startsWith(`read replica ${standbyHost} is not read from (down`));) {
      assert.ok(Date.now() < deadline, `operators are told the replica is down: ${JSON.stringify(warnings)}`)
      await new Promise((resolve) => setTimeout(resolve, 20))
    }
  })

  test('a revoked key is refused, and stays refused, although the replica that looks keys up has not applied the revocation yet', { timeout: 120_000 }, async (t) => {
    // The standby applies each commit 6 s late: long after the instance refuses the key (within a second), so the
    // 20 lookups below all happen while the standby still shows the key as live.
    const pair = await startReplicatedPair(t, { applyDelayMs: 6000 })
    if (pair === undefined) return t.skip('PostgreSQL server binaries are missing')
    const onReplica = await startInstance(t, [pair.primary.url], { replicaUrls: [pair.standby.url] })
    const key = await createTestKey(onReplica.store)
    const other = await createApiKey(onReplica.store, { email: 'test@example.com' })
    await replicaInUse(onReplica.store)
    const get = async (presented: string): Promise<number> =>
      (await fetch(`${onReplica.baseUrl}/v1/pets`, { headers: { authorization: `Bearer ${presented}` } })).status
    assert.equal(await get(key), 200)

    const [row] = await onReplica.store.apiKeys.listByAccount(1)
    assert.ok(row !== undefined)
    // Until the standby has applied the key's creation, it has no row to read stale: a lookup would miss there, go to
    // the primary, and prove nothing. On a busy machine the revocation could otherwise come first (the check below
    // then found no row on the standby at all).
    for (const deadline = Date.now() + 20_000; ;) {
      const [created] = await pair.standby.query<{ id: number }>('SELECT id FROM api_keys WHERE id = $1', [row.id])
      if (created !== undefined) break
      assert.ok(Date.now() < deadline, 'the standby applies the key\'s creation')
      await new Promise((resolve) => setTimeout(resolve, 50))
    }
    const revokedAt = Date.now()
    assert.equal(await onReplica.store.apiKeys.revoke(row.id), 'revoked')
    for (let status = 200; status !== 401;) {
      assert.ok(Date.now() - revokedAt < 5000, 'the revocation reaches the instance')
      status = await get(key)
    }
    t.diagnostic(`refused ${Date.now() - revokedAt} ms after the revocation`)
    const [onStandby] = await pair.standby.query<{ revoked_at: string | null }>('SELECT revoked_at FROM api_keys WHERE id = $1', [row.id])
    assert.equal(onStandby?.revoked_at, null, 'the standby has not applied the revocation yet')
    for (let attempt = 0; attempt < 20; attempt++) assert.equal(await get(key), 401, 'a key looked up again is not taken from the lagging replica')
    assert.equal(await get(other.key), 200, 'other keys still work')
  })
})
