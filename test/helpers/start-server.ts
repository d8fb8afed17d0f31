import type { TestContext } from 'node:test'
import { buildTestApp, type TestApp } from './build-app.js'

export interface TestServer extends TestApp {
  /** http://127.0.0.1:PORT */
  baseUrl: string
}

/** The real application listening on a real socket (an ephemeral port on loopback). */
export async function startServer (t: TestContext, env: Record<string, string> = {}): Promise<TestServer> {
  const testApp = await buildTestApp(t, env)
  await testApp.app.listen({ host: '127.0.0.1', port: 0 })
  const address = testApp.app.server.address()
  if (address === null || typeof address === 'string') throw new Error('server has no TCP address')
  return { ...testApp, baseUrl: `http://127.0.0.1:${address.port}` }
}
