import { randomBytes } from 'node:crypto'
import pg from 'pg'
import type { Scope } from './build-app.js'

/** The PostgreSQL server tests use; each test gets a schema of its own in it. */
export const POSTGRES_URL = process.env.TEST_POSTGRES_URL ?? 'postgres://postgres@127.0.0.1:5432/test'

let availability: Promise<boolean> | undefined

/**
 * Whether PostgreSQL answers. Under CI=true a missing server is a failure, not a
 * reason to skip: the caller gets an exception.
 */
export async function postgresAvailable (): Promise<boolean> {
  availability ??= (async () => {
    const client = new pg.Client({ connectionString: POSTGRES_URL, connectionTimeoutMillis: 3000 })
    try {
      await client.connect()
      await client.query('SELECT 1')
      return true
    } catch (error) {
      if (process.env.CI === 'true') {
        throw new Error(`PostgreSQL is required in CI but ${POSTGRES_URL} does not answer: ${(error as Error).message}. ` +
          'Start it with: pg_ctlcluster --skip-systemctl-redirect $(ls /etc/postgresql) main start')
      }
      process.stderr.write(`\n*** PostgreSQL at ${POSTGRES_URL} does not answer: PostgreSQL suites are SKIPPED ***\n\n`)
      return false
    } finally {
      await client.end().catch(() => {})
    }
  })()
  return availability
}

/** A fresh schema, dropped after the test; returns a DATABASE_URL whose search_path is that schema. */
export async function createTestSchema (t: Scope): Promise<string> {
  const schema = `test_${randomBytes(6).toString('hex')}`
  const admin = new pg.Client({ connectionString: POSTGRES_URL })
  await admin.connect()
  try {
    await admin.query(`CREATE SCHEMA ${schema}`)
  } finally {
    await admin.end()
  }
  t.after(async () => {
    const cleanup = new pg.Client({ connectionString: POSTGRES_URL })
    await cleanup.connect()
    try {
      await cleanup.query(`DROP SCHEMA IF EXISTS ${schema} CASCADE`)
    } finally {
      await cleanup.end()
    }
  })
  const url = new URL(POSTGRES_URL)
  url.searchParams.set('options', `-c search_path=${schema}`)
  return url.toString()
}
