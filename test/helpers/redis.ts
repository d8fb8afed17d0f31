import { Redis } from 'ioredis'

export const REDIS_URL = process.env.TEST_REDIS_URL ?? 'redis://127.0.0.1:6379'

let availability: Promise<boolean> | undefined

/** Whether Redis answers; under CI=true a missing Redis is an error rather than a skip. */
export async function redisAvailable (): Promise<boolean> {
  availability ??= (async () => {
    const client = new Redis(REDIS_URL, { connectTimeout: 1000, maxRetriesPerRequest: 0, lazyConnect: true, retryStrategy: () => null })
    client.on('error', () => {})
    try {
      await client.connect()
      return await client.ping() === 'PONG'
    } catch (error) {
      if (process.env.CI === 'true') throw new Error(`Redis is required in CI but ${REDIS_URL} does not answer: ${(error as Error).message}`)
      process.stderr.write(`\n*** Redis at ${REDIS_URL} does not answer: shared rate-limit tests are SKIPPED ***\n\n`)
      return false
    } finally {
      client.disconnect()
    }
  })()
  return availability
}
