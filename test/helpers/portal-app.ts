import assert from 'node:assert/strict'
import type { TestContext } from 'node:test'
import type { FastifyInstance } from 'fastify'
import { pino } from 'pino'
import { loadConfig } from '../../src/config.js'
import type { Store } from '../../src/storage/store.js'
import { buildServedApp, TEST_DEFAULTS } from './build-app.js'

/* What the portal suites (test/http/portal*.test.ts) share. */
export async function secondInstance (t: TestContext, store: Store, env: Record<string, string> = {}): Promise<FastifyInstance> {
  const app = await buildServedApp({ config: loadConfig({ ...TEST_DEFAULTS, ...env }), store, logger: pino({ level: 'silent' }) })
  t.after(() => app.close())
  return app
}

export async function apiStatus (app: FastifyInstance, key: string): Promise<number> {
  return (await app.inject({ url: '/v1/pets', headers: { authorization: `Bearer ${key}` } })).statusCode
}

/** Polls until the key is refused; returns how long that took. */
export async function msUntilRefused (app: FastifyInstance, key: string, since: number): Promise<number> {
  for (;;) {
    const status = await apiStatus(app, key)
    if (status === 401) return performance.now() - since
    assert.equal(status, 200)
    if (performance.now() - since > 5000) assert.fail('the revoked key was still accepted after 5 s')
    await new Promise((resolve) => setTimeout(resolve, 20))
  }
}

/** Body without what legitimately differs between two answers to the same form: the email typed. */
export const withoutEmail = (body: string, email: string): string => body.replaceAll(email, 'EMAIL')

/** The first-request snippet as the browser shows it (entities decoded). */
export function snippetOf (body: string): string {
  const match = /<code id="snippet">([^<]*)<\/code>/.exec(body)
  assert.ok(match?.[1], body)
  return match[1].replaceAll('&quot;', '"').replaceAll('&#39;', "'").replaceAll('&lt;', '<').replaceAll('&gt;', '>').replaceAll('&amp;', '&')
}
