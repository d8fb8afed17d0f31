import { describe, test } from 'node:test'
import assert from 'node:assert/strict'
import { slackFor } from '../../src/services/rate-limiter.js'
import { tempDir } from '../helpers/build-app.js'
import { redisAvailable, REDIS_URL } from '../helpers/redis.js'
import { dbFile, launchServer, seedApiKey } from '../helpers/server-process.js'

const LIMIT = 300
const REQUESTS = 1500
const CONNECTIONS_PER_SERVER = 32

interface Answer { status: number, window: number, remaining: number }

/** The clock minute a response was counted in, from the seconds its RateLimit field says are left. */
function windowOf (ratelimit: string | null): number {
  const reset = Number(/;t=(\d+)/.exec(ratelimit ?? '')?.[1])
  assert.ok(Number.isInteger(reset) && reset >= 1 && reset <= 60, `RateLimit: ${ratelimit}`)
  return Math.round((Date.now() / 1000 + reset) / 60)
}

describe('rate limits shared by two server processes through Redis', () => {
  test(`admit at most limit + instances × slack requests of one key per window (${LIMIT} + 2 × ${slackFor(LIMIT)}), and refuse none early`, { timeout: 120_000 }, async (t) => {
    if (!await redisAvailable()) {
      t.skip('Redis is not reachable')
      return
    }
    const dbPath = dbFile(tempDir(t))
    const key = await seedApiKey(dbPath)
    const env = { DATABASE_URL: `sqlite:${dbPath}`, RATE_LIMIT_PER_MINUTE: String(LIMIT), REDIS_URL, LOG_LEVEL: 'info' }
    const servers = [launchServer(t, env), launchServer(t, env)]
    const [first = '', second = ''] = await Promise.all(servers.map(async (server) => await server.listening))

    const answers: Answer[] = []
    let next = 0
    const client = async (baseUrl: string): Promise<void> => {
      while (next < REQUESTS) {
        next++
        const response = await fetch(`${baseUrl}/v1/pets?limit=1`, { headers: { authorization: `Bearer ${key}` } })
        await response.arrayBuffer()
        assert.ok(response.status === 200 || response.status === 429, `status ${response.status}`)
        const ratelimit = response.headers.get('ratelimit')
        assert.equal(response.headers.get('ratelimit-policy'), `"per-key";q=${LIMIT};w=60`)
        answers.push({ status: response.status, window: windowOf(ratelimit), remaining: Number(/;r=(\d+)/.exec(ratelimit ?? '')?.[1]) })
      }
    }
    await Promise.all([first, second].flatMap((baseUrl) => Array.from({ length: CONNECTIONS_PER_SERVER }, async () => await client(baseUrl))))

    const windows = new Map<number, { admitted: number, refused: number }>()
    for (const answer of answers) {
      const counts = windows.get(answer.window) ?? { admitted: 0, refused: 0 }
      if (answer.status === 200) counts.admitted++
      else {
        counts.refused++
        assert.equal(answer.remaining, 0, 'a refusal says nothing is left')
      }
      windows.set(answer.window, counts)
    }
    const bound = LIMIT + 2 * slackFor(LIMIT)
    for (const [window, { admitted, refused }] of windows) {
      assert.ok(admitted <= bound, `window ${window}: ${admitted} admitted, more than ${bound}`)
      // A window that refused anything had reached the limit first: nobody is refused early.
      if (refused > 0) assert.ok(admitted >= LIMIT, `window ${window}: ${refused} refused with only ${admitted} admitted`)
    }
    assert.ok([...windows.values()].some(({ refused }) => refused > 0), 'the burst went over the limit')
    for (const server of servers) assert.equal(server.logs.filter((line) => Number(line.level) >= 50).length, 0, server.lines.join('\n'))
  })

  test('bursts of one key on both processes at once wait for the shared count: at most limit + 2 × slack admitted, none refused early', { timeout: 120_000 }, async (t) => {
    if (!await redisAvailable()) {
      t.skip('Redis is not reachable')
      return
    }
    const limit = 10
    const burst = 20
    const dbPath = dbFile(tempDir(t))
    // Many keys, each its own count and its own burst: whether the two processes' bursts overlap varies from burst
    // to burst, and only an overlap shows waiters admitted on a count the other process has since passed.
    const keys: string[] = []
    for (let index = 0; index < 20; index++) keys.push(await seedApiKey(dbPath))
    const env = { DATABASE_URL: `sqlite:${dbPath}`, RATE_LIMIT_PER_MINUTE: String(limit), REDIS_URL, LOG_LEVEL: 'info' }
    const servers = [launchServer(t, env), launchServer(t, env)]
    const urls = await Promise.all(servers.map(async (server) => await server.listening))
    const list = async (baseUrl: string, key: string): Promise<{ status: number, window: number }> => {
      const response = await fetch(`${baseUrl}/v1/pets?limit=1`, { headers: { authorization: `Bearer ${key}` } })
      await response.arrayBuffer()
      return { status: response.status, window: windowOf(response.headers.get('ratelimit')) }
    }
    // Connections opened beforehand, so that each burst reaches its process together, as many clients' requests do.
    await Promise.all(urls.flatMap((url) => Array.from({ length: burst }, async () => await (await fetch(`${url}/healthz`)).arrayBuffer())))

    const admittedPerKey: number[] = []
    for (const key of keys) {
      const answers = await Promise.all(urls.flatMap((url) => Array.from({ length: burst }, async () => await list(url, key))))
      assert.deepEqual(answers.filter(({ status }) => status !== 200 && status !== 429), [])
      // A burst that the turn of the minute splits is counted in two windows: the one burst of a run that may be, left out.
      if (new Set(answers.map(({ window }) => window)).size > 1) continue
      admittedPerKey.push(answers.filter(({ status }) => status === 200).length)
    }
    assert.ok(admittedPerKey.length >= keys.length - 1, 'at most one burst straddled a minute')
    const bound = limit + 2 * slackFor(limit)
    assert.deepEqual(admittedPerKey.filter((admitted) => admitted > bound), [], `more than ${limit} + 2 × ${slackFor(limit)} admitted for a key: ${admittedPerKey.join(', ')}`)
    assert.deepEqual(admittedPerKey.filter((admitted) => admitted < limit), [], `refused before the limit was reached: ${admittedPerKey.join(', ')}`)
  })
})
