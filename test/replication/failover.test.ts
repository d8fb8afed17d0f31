import { describe, test, type TestContext } from 'node:test'
import assert from 'node:assert/strict'
import { createTestKey } from '../helpers/build-app.js'
import { startReplicatedPair } from '../helpers/pg-cluster.js'
import { openStoreOn, startInstance } from '../helpers/replication.js'
import { launchServer } from '../helpers/server-process.js'

const WRITERS = 64
/** Creates acknowledged before the primary is killed, and after the service is back. */
const BEFORE = 200
const AFTER = 100
/** A client gives up on a request after this: longer would be a hang. */
const REQUEST_DEADLINE_MS = 20_000

interface Trial {
  acknowledged: Map<number, string>
  lost: number
  unavailable: number
  /** From the SIGKILL to the first 201 after the promotion. */
  outageMs: number
  /** Of the lost creates, those sent after the promotion: the new primary committed them itself. */
  lostAfterPromotion: number
  /** From the promotion to the first 201 after it. */
  afterPromotionMs: number
  /** The longest any request waited for its answer. */
  slowestMs: number
  /** How far the standby's flushed WAL was behind the primary's just before the SIGKILL. */
  standbyBehindBytes: number
}

/**
 * The service with DATABASE_URL listing both hosts, 64 writers creating animals, the primary
 * SIGKILLed (every one of its processes) after BEFORE creates, the standby promoted at once, and
 * the writers going on until AFTER more creates are acknowledged.
 */
async function failoverTrial (t: TestContext, synchronous: boolean): Promise<Trial | undefined> {
  const pair = await startReplicatedPair(t, { synchronous })
  if (pair === undefined) {
    t.skip('PostgreSQL server binaries are missing')
    return undefined
  }
  const setup = openStoreOn(t, [pair.primary.url])
  await setup.migrate()
  const auth = { authorization: `Bearer ${await createTestKey(setup)}` }
  await setup.close()

  const server = launchServer(t, { DATABASE_URL: `${pair.primary.url},${pair.standby.url}`, LOG_LEVEL: 'info', DATABASE_POOL_SIZE: '16' })
  const baseUrl = await server.listening

  const acknowledged = new Map<number, string>()
  const sentAfterPromotion = new Set<number>()
  const unexpected: string[] = []
  let unavailable = 0
  let killedAt = 0
  let promotedAt = 0
  let backAt = 0
  let afterBack = 0
  let slowestMs = 0
  let reachedBefore: () => void = () => {}
  const before = new Promise<void>((resolve) => { reachedBefore = resolve })
  const writers = Array.from({ length: WRITERS }, async (_, writer) => {
    for (let n = 0; afterBack < AFTER && unexpected.length === 0; n++) {
      const name = `writer ${writer} create ${n}`
      const sentAt = Date.now()
      try {
        const response = await fetch(`${baseUrl}/v1/pets`, {
          method: 'POST',
          headers: { ...auth, 'content-type': 'application/json' },
          body: JSON.stringify({ name, categoryId: 1 }),
          signal: AbortSignal.timeout(REQUEST_DEADLINE_MS)
        })
        const body = await response.text()
        slowestMs = Math.max(slowestMs, Date.now() - sentAt)
        if (response.status === 201) {
          acknowledged.set((JSON.parse(body) as { id: number }).id, name)
          if (acknowledged.size >= BEFORE) reachedBefore()
          if (promotedAt > 0 && sentAt > promotedAt) {
            sentAfterPromotion.add((JSON.parse(body) as { id: number }).id)
            if (backAt === 0) backAt = Date.now()
            afterBack++
          }
        } else if (response.status === 503 && response.headers.get('retry-after') !== null) {
          unavailable++
          // A client that honours Retry-After waits before trying again; a tenth of it keeps the trial short.
          await new Promise((resolve) => setTimeout(resolve, 100))
        } else {
          unexpected.push(`${response.status} ${body}`)
        }
      } catch (error) {
        unexpected.push(`no answer within ${REQUEST_DEADLINE_MS} ms: ${(error as Error).message}`)
      }
    }
  })

  await Promise.race([before, Promise.all(writers)])
  const [behind] = await pair.primary.query<{ bytes: string }>("SELECT pg_wal_lsn_diff(pg_current_wal_lsn(), flush_lsn)::text AS bytes FROM pg_stat_replication WHERE application_name = 'standby'")
  killedAt = Date.now()
  pair.primary.kill()
  await pair.standby.promote()
  promotedAt = Date.now()
  await Promise.all(writers)
  assert.deepEqual(unexpected, [], 'every answer is a 201 or a 503 with Retry-After, and none hangs')
  assert.equal(server.child.exitCode, null, 'the same process serves throughout: no restart')
  assert.ok(afterBack >= AFTER, 'the service took creates again on the promoted standby')

  const rows = await pair.standby.query<{ id: string, name: string }>('SELECT id, name FROM pets WHERE id = ANY($1::bigint[])', [[...acknowledged.keys()]])
  const kept = new Map(rows.map((row) => [Number(row.id), row.name]))
  let lost = 0
  let lostAfterPromotion = 0
  for (const [id, name] of acknowledged) {
    if (kept.get(id) === name) continue
    lost++
    if (sentAfterPromotion.has(id)) lostAfterPromotion++
  }

  const { database: ready } = await (await fetch(`${baseUrl}/readyz`)).json() as { database: { primary: string, timeline: number } }
  assert.equal(ready.primary, `127.0.0.1:${pair.standby.port}/postgres`, '/readyz names the promoted standby')
  assert.equal(ready.timeline, 2)
  await server.waitForLog((entry) => typeof entry.msg === 'string' && entry.msg.startsWith(`the PostgreSQL primary is now 127.0.0.1:${pair.standby.port}/postgres (timeline 2)`))
  if (!synchronous) await server.waitForLog((entry) => typeof entry.msg === 'string' && entry.msg.startsWith('PostgreSQL replicates asynchronously'))
  return { acknowledged, lost, lostAfterPromotion, unavailable, outageMs: backAt - killedAt, afterPromotionMs: backAt - promotedAt, slowestMs, standbyBehindBytes: Number(behind?.bytes ?? NaN) }
}

const describeTrial = (trial: Trial): string =>
  `${trial.acknowledged.size} creates acknowledged, ${trial.lost} of them lost; ${trial.unavailable} answers 503 with Retry-After; ` +
  `first 201 ${trial.outageMs} ms after the SIGKILL, ${trial.afterPromotionMs} ms after the promotion; slowest answer ${trial.slowestMs} ms; ` +
  `the standby had flushed all but ${trial.standbyBehindBytes} bytes of WAL just before the SIGKILL`

describe('failover', () => {
  test('synchronous replication: SIGKILL the primary under 64 concurrent writers, promote the standby: every create answered 201 is on it, and the service follows it by itself with only 503 and Retry-After between', { timeout: 180_000 }, async (t) => {
    const trial = await failoverTrial(t, true)
    if (trial === undefined) return
    t.diagnostic(describeTrial(trial))
    assert.equal(trial.lost, 0, 'no acknowledged create is lost')
  })

  test('asynchronous replication: the same trial: a create sent after the promotion and answered 201 is never lost', { timeout: 180_000 }, async (t) => {
    const trial = await failoverTrial(t, false)
    if (trial === undefined) return
    // Without a synchronous standby, the creates acknowledged in the moment before the SIGKILL may not have reached
    // the standby: how many varies from run to run (docs/replication.md gives figures), so only what holds in every
    // run is asserted. A create sent once the standby is promoted is committed there, so none of those is lost.
    t.diagnostic(describeTrial(trial))
    assert.equal(trial.lostAfterPromotion, 0, 'no create sent after the promotion and answered 201 is lost')
  })

  test('after a failover, an animal read on the old primary is not answered from the cache: the new primary may have given its id to another', { timeout: 120_000 }, async (t) => {
    const pair = await startReplicatedPair(t)
    if (pair === undefined) return t.skip('PostgreSQL server binaries are missing')
    const instance = await startInstance(t, [pair.primary.url, pair.standby.url])
    const auth = { authorization: `Bearer ${await createTestKey(instance.store)}` }
    const created = await fetch(`${instance.baseUrl}/v1/pets`, { method: 'POST', headers: { ...auth, 'content-type': 'application/json' }, body: '{"name":"on the old primary","categoryId":1}' })
    const { id } = await created.json() as { id: number }
    const read = async (): Promise<string> => await (await fetch(`${instance.baseUrl}/v1/pets/${id}`, { headers: auth })).text()
    assert.match(await read(), /on the old primary/)
    assert.match(await read(), /on the old primary/, 'read again, from the cache')

    pair.primary.kill()
    await pair.standby.promote()
    // Stands for a create the old primary showed but never sent: the new primary reuses its id.
    await pair.standby.query("UPDATE pets SET name = 'on the new primary' WHERE id = $1", [id])
    await pair.standby.waitFor('the instance to follow the promoted standby', async () =>
      instance.store.replicationStats?.().primary === `127.0.0.1:${pair.standby.port}/postgres`)
    assert.match(await read(), /on the new primary/)
  })

  test('a create whose wait for the synchronous standby is cancelled is answered 503, although PostgreSQL reports its commit a success', { timeout: 120_000 }, async (t) => {
    const pair = await startReplicatedPair(t, { synchronous: true })
    if (pair === undefined) return t.skip('PostgreSQL server binaries are missing')
    const instance = await startInstance(t, [pair.primary.url, pair.standby.url])
    const auth = { authorization: `Bearer ${await createTestKey(instance.store)}` }
    // Without its synchronous standby, the primary holds every commit until one comes back.
    await pair.standby.stop('fast')

    const answer = fetch(`${instance.baseUrl}/v1/pets`, {
      method: 'POST',
      headers: { ...auth, 'content-type': 'application/json' },
      body: '{"name":"never confirmed","categoryId":1}',
      signal: AbortSignal.timeout(REQUEST_DEADLINE_MS)
    })
    let waiting: string | undefined
    await pair.primary.waitFor('a commit waiting for the standby', async () => {
      waiting = (await pair.primary.query<{ pid: string }>("SELECT pid FROM pg_stat_activity WHERE wait_event = 'SyncRep'"))[0]?.pid
      return waiting !== undefined
    })
    // What an operator's pg_cancel_backend, or the statement timeout, does.
    await pair.primary.query('SELECT pg_cancel_backend($1)', [waiting])
    const response = await answer
    assert.equal(response.status, 503, await response.clone().text())
    assert.equal(response.headers.get('retry-after'), '1')
    assert.equal((await response.json() as { code: string }).code, 'service_unavailable')
    const [row] = await pair.primary.query("SELECT id FROM pets WHERE name = 'never confirmed'")
    assert.ok(row !== undefined, 'PostgreSQL committed it locally: a 201 would have promised what a failover can take back')
  })
})
