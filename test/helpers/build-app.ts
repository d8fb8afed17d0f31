import { mkdtempSync, rmSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import assert from 'node:assert/strict'
import { after, before } from 'node:test'
import type { FastifyBaseLogger, FastifyInstance } from 'fastify'
import { inject, type DispatchFunc, type InjectOptions, type Response as LightMyRequestResponse } from 'light-my-request'
import { pino } from 'pino'
import { buildApp } from '../../src/app.js'
import { loadConfig, type Config } from '../../src/config.js'
import { createAccount, createApiKey } from '../../src/services/accounts.js'
import { openPostgresStore } from '../../src/storage/postgres/postgres-store.js'
import { openSqliteStore } from '../../src/storage/sqlite/sqlite-store.js'
import type { Store } from '../../src/storage/store.js'
import { TEST_HASH_COST_ENV } from './password-cost.js'
import { createTestSchema } from './postgres.js'
import { TEST_ENGINE } from './test-engine.js'

export { TEST_ENGINE }

export interface TestApp {
  app: FastifyInstance
  store: Store
  /** A valid API key of the account test@example.com. */
  key: string
  /** Authorization header carrying `key`. */
  auth: { authorization: string }
  /** The SQLite file (empty on PostgreSQL). */
  dbPath: string
  /** DATABASE_URL of the store, for spawned processes. */
  databaseUrl: string
}

/**
 * Load shedding answers 503 whenever the event loop stalls, which a busy test machine does at
 * random: off by default in tests, and tested on its own with an explicit threshold. Passwords are
 * hashed at the lowest cost (TEST_HASH_COST_ENV).
 */
export const TEST_DEFAULTS: Record<string, string> = { LOAD_SHED_EVENT_LOOP_DELAY_MS: '0', METRICS_TOKEN: 'test-metrics-token-0123456789', ...TEST_HASH_COST_ENV }

/** What a scrape sends for GET /metrics of a test app (TEST_DEFAULTS sets the token: without one /metrics is not served). */
export const METRICS_AUTH = { authorization: `Bearer ${TEST_DEFAULTS.METRICS_TOKEN ?? ''}` }

/**
 * What a test's resources are released with: a test's context (released after that test), or a
 * suite's scope (suiteScope: released after the last test of a describe).
 */
export interface Scope {
  after: (fn: () => unknown) => void
}

/**
 * A scope that ends with the describe it is created in (that describe's after hook), releasing the
 * last resource first, as the scopes of nested calls expect: an app closes before its store, a
 * store before its directory is removed.
 */
export function suiteScope (): Scope {
  const releases: Array<() => unknown> = []
  after(async () => {
    for (const release of releases.reverse()) await release()
  })
  return { after: (release) => { releases.push(release) } }
}

/**
 * One resource for every test of the describe this is called in: built when the first test asks
 * for it, released after the last. For tests that leave nothing behind that another could trip over,
 * or that look only at what they made themselves.
 */
export function perSuite<T> (build: (scope: Scope) => Promise<T>): () => Promise<T> {
  const scope = suiteScope()
  let built: Promise<T> | undefined
  return async () => await (built ??= build(scope))
}

/** A fresh temporary directory, removed after the test. */
export function tempDir (t: Scope): string {
  const dir = mkdtempSync(join(tmpdir(), 'animal-store-test-'))
  t.after(() => rmSync(dir, { recursive: true, force: true }))
  return dir
}

/**
 * Opens and migrates a fresh store, closed after the test: a SQLite file in a temporary
 * directory, or with TEST_ENGINE=postgres a schema of its own on the test PostgreSQL.
 */
export async function openTestStore (t: Scope): Promise<{ store: Store, dbPath: string, databaseUrl: string }> {
  if (TEST_ENGINE === 'postgres') {
    const databaseUrl = await createTestSchema(t)
    const store = openPostgresStore(databaseUrl, { poolSize: 4, onError: () => {} })
    t.after(() => store.close())
    await store.migrate()
    return { store, dbPath: '', databaseUrl }
  }
  const dbPath = join(tempDir(t), 'animal-store.sqlite')
  const store = openSqliteStore(dbPath)
  t.after(() => store.close())
  await store.migrate()
  return { store, dbPath, databaseUrl: `sqlite:${dbPath}` }
}

export async function createTestKey (store: Store, email = 'test@example.com'): Promise<string> {
  if (await store.accounts.findByEmail(email) === undefined) await createAccount(store, { email })
  return (await createApiKey(store, { email })).key
}

/**
 * Makes app.inject go through the server's request handler, as a request on the socket does,
 * instead of straight into Fastify's router: an injected request then meets the whole pipeline
 * (src/http/pipeline.ts), which hands the framework only what lies outside /v1.
 */
export function injectThroughServer (app: FastifyInstance): FastifyInstance {
  const [handler] = app.server.listeners('request') as DispatchFunc[]
  if (handler === undefined) throw new Error('the server has no request handler')
  const injectThrough = async (options: InjectOptions | string): Promise<LightMyRequestResponse> => {
    await app.ready()
    return await inject(handler, options)
  }
  app.inject = injectThrough as FastifyInstance['inject']
  return app
}

/** buildApp, with app.inject going through the server's request handler (injectThroughServer). */
export async function buildServedApp (options: Parameters<typeof buildApp>[0]): Promise<FastifyInstance> {
  const app = injectThroughServer(await buildApp(options))
  BUILT.set(app, options)
  return app
}

const BUILT = new WeakMap<FastifyInstance, { store: Store, config: Readonly<Config> }>()

/** The store a test app was built on: what a test reads the mail outbox of. */
export function storeOfTestApp (app: FastifyInstance): Store | undefined {
  return BUILT.get(app)?.store
}

/** The configuration a test app was built with. */
export function configOfTestApp (app: FastifyInstance): Readonly<Config> | undefined {
  return BUILT.get(app)?.config
}

/** The real application on a fresh SQLite file, with one account and key; use app.inject. Logs nothing unless given a logger. */
export async function buildTestApp (t: Scope, env: Record<string, string> = {}, logger: FastifyBaseLogger = pino({ level: 'silent' })): Promise<TestApp> {
  const { store, dbPath, databaseUrl } = await openTestStore(t)
  const app = await buildServedApp({ config: loadConfig({ ...TEST_DEFAULTS, ...env }), store, logger })
  t.after(() => app.close())
  const key = await createTestKey(store)
  return { app, store, key, auth: { authorization: `Bearer ${key}` }, dbPath, databaseUrl }
}

/**
 * One test app for all the tests of the suite whose body calls this (of the file, when called at its
 * top level): built before the first, closed after the last. It saves an app and a database per test,
 * for tests that keep to accounts of their own and look at nothing store-wide. Tests get the app from
 * the function returned.
 */
export function suiteTestApp (env: Record<string, string> = {}): () => TestApp {
  const scope = suiteScope()
  let shared: TestApp | undefined
  before(async () => { shared = await buildTestApp(scope, env) })
  return () => {
    assert.ok(shared, 'the suite app is built before its first test')
    return shared
  }
}
