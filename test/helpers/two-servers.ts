import type { TestContext } from 'node:test'
import { pino } from 'pino'
import { buildApp } from '../../src/app.js'
import { loadConfig } from '../../src/config.js'
import { TEST_DEFAULTS } from './build-app.js'
import { startServer, type TestServer } from './start-server.js'

/** The service twice on one store: with the hot paths in front of Fastify, and with every request through Fastify. */
export async function twoServers (t: TestContext): Promise<{ hot: TestServer, framework: string }> {
  const hot = await startServer(t)
  const framework = await buildApp({ config: loadConfig(TEST_DEFAULTS), store: hot.store, logger: pino({ level: 'silent' }), hotPaths: false })
  t.after(() => framework.close())
  await framework.listen({ host: '127.0.0.1', port: 0 })
  const address = framework.server.address()
  if (address === null || typeof address === 'string') throw new Error('no TCP address')
  return { hot, framework: `http://127.0.0.1:${address.port}` }
}
