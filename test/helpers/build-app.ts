import { mkdtempSync, rmSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import type { TestContext } from 'node:test'
import type { FastifyInstance } from 'fastify'
import { pino } from 'pino'
import { buildApp } from '../../src/app.js'
import { loadConfig } from '../../src/config.js'
import { createAccount, createApiKey } from '../../src/services/accounts.js'
import { openSqliteStore } from '../../src/storage/sqlite/sqlite-store.js'
import type { Store } from '../../src/storage/store.js'

export interface TestApp {
  app: FastifyInstance
  store: Store
  /** A valid API key of the account test@example.com. */
  key: string
  /** Authorization header carrying `key`. */
  auth: { authorization: string }
  dbPath: string
}

/** A fresh temporary directory, removed after the test. */
export function tempDir (t: TestContext): string {
  const dir = mkdtempSync(join(tmpdir(), 'animal-store-test-'))
  t.after(() => rmSync(dir, { recursive: true, force: true }))
  return dir
}

/** Opens and migrates a fresh SQLite store in a temporary directory, closed after the test. */
export async function openTestStore (t: TestContext, dir = tempDir(t)): Promise<{ store: Store, dbPath: string }> {
  const dbPath = join(dir, 'animal-store.sqlite')
  const store = openSqliteStore(dbPath)
  await store.migrate()
  t.after(() => store.close())
  return { store, dbPath }
}

export async function createTestKey (store: Store, email = 'test@example.com'): Promise<string> {
  if (await store.accounts.findByEmail(email) === undefined) await createAccount(store, { email })
  return (await createApiKey(store, { email })).key
}

/** The real application on a fresh SQLite file, with one account and key; use app.inject. */
export async function buildTestApp (t: TestContext, env: Record<string, string> = {}): Promise<TestApp> {
  const { store, dbPath } = await openTestStore(t)
  const app = await buildApp({ config: loadConfig(env), store, logger: pino({ level: 'silent' }) })
  t.after(() => app.close())
  const key = await createTestKey(store)
  return { app, store, key, auth: { authorization: `Bearer ${key}` }, dbPath }
}
