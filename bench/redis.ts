import { Redis } from 'ioredis'

export const BENCH_REDIS_URL = process.env.BENCH_REDIS_URL ?? 'redis://127.0.0.1:6379'

/** Whether the Redis the production profile shares its rate limits through answers. */
export async function redisAvailable (): Promise<boolean> {
  const client = new Redis(BENCH_REDIS_URL, { connectTimeout: 1000, maxRetriesPerRequest: 0, lazyConnect: true, retryStrategy: () => null })
  client.on('error', () => {})
  try {
    await client.connect()
    return await client.ping() === 'PONG'
  } catch {
    return false
  } finally {
    client.disconnect()
  }
}
