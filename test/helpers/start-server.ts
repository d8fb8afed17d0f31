import { once } from 'node:events'
import type { Server } from 'node:http'
import { connect, type Socket } from 'node:net'
import type { TestContext } from 'node:test'
import { buildTestApp, type Scope, type TestApp } from './build-app.js'
import { eventually } from './eventually.js'

export interface TestServer extends TestApp {
  /** http://127.0.0.1:PORT */
  baseUrl: string
}

/** The real application listening on a real socket (an ephemeral port on loopback). */
export async function startServer (t: Scope, env: Record<string, string> = {}): Promise<TestServer> {
  const testApp = await buildTestApp(t, env)
  await testApp.app.listen({ host: '127.0.0.1', port: 0 })
  const address = testApp.app.server.address()
  if (address === null || typeof address === 'string') throw new Error('server has no TCP address')
  return { ...testApp, baseUrl: `http://127.0.0.1:${address.port}` }
}

/** A raw TCP connection to the server: what a test writes goes out byte for byte, and everything received is kept. */
export interface RawConnection {
  socket: Socket
  /** Settles when the server ends the connection; rejects if it has not within 30 s, well inside the keep-alive timeout (72 s). */
  ended: Promise<unknown[]>
  received: () => string
}

/** Opens a raw connection to the server at baseUrl, destroyed when the test ends. */
export async function openRawConnection (t: TestContext, baseUrl: string): Promise<RawConnection> {
  const socket = connect(Number(new URL(baseUrl).port), '127.0.0.1')
  t.after(() => socket.destroy())
  await once(socket, 'connect')
  let received = ''
  socket.setEncoding('utf8').on('data', (chunk: string) => { received += chunk })
  return { socket, ended: once(socket, 'end', { signal: AbortSignal.timeout(30_000) }), received: () => received }
}

/**
 * Resolves once the server has stopped accepting connections (its close has begun), which no event
 * announces; throws if that has not happened within 10 s.
 */
export async function stoppedListening (server: Server): Promise<void> {
  await eventually(() => { if (server.listening) throw new Error('the server still accepts connections after its close began') }, { timeout: 10_000, interval: 0 })
}
