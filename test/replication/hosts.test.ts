import { describe, test } from 'node:test'
import assert from 'node:assert/strict'
import { StoreUnavailableError } from '../../src/storage/store.js'
import { startReplicatedPair } from '../helpers/pg-cluster.js'
import { openStoreOn } from '../helpers/replication.js'

describe('several PostgreSQL hosts in DATABASE_URL', () => {
  test('writes go to the host that is not in recovery, wherever it is listed; with a standby alone they fail as unavailable, at once', { timeout: 120_000 }, async (t) => {
    const pair = await startReplicatedPair(t)
    if (pair === undefined) return t.skip('PostgreSQL server binaries are missing')
    const standbyFirst = openStoreOn(t, [pair.standby.url, pair.primary.url])
    await standbyFirst.migrate()
    const { id } = await standbyFirst.pets.insert({ name: 'on the primary', categoryId: 1n, status: 'available' })
    assert.equal((await pair.primary.query('SELECT name FROM pets WHERE id = $1', [id]))[0]?.name, 'on the primary')
    const stats = standbyFirst.replicationStats?.()
    assert.equal(stats?.primary, `127.0.0.1:${pair.primary.port}/postgres`)
    assert.equal(stats?.timeline, 1)
    assert.deepEqual(stats?.hosts.map((host) => host.role), ['standby', 'primary'])

    const standbyOnly = openStoreOn(t, [pair.standby.url])
    await assert.rejects(standbyOnly.pets.insert({ name: 'nowhere', categoryId: 1n, status: undefined }),
      (error: unknown) => error instanceof StoreUnavailableError && /no PostgreSQL host accepts writes/.test(String((error.cause as Error).message)))
    await assert.rejects(standbyOnly.ping(), StoreUnavailableError)
  })
})
