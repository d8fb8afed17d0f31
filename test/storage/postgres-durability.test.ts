import { test } from 'node:test'
import assert from 'node:assert/strict'
import { openPostgresStore } from '../../src/storage/postgres/postgres-store.js'
import { createTestSchema, postgresAvailable } from '../helpers/postgres.js'

test('warns loudly when PostgreSQL would not make acknowledged writes durable', async (t) => {
  if (!await postgresAvailable()) {
    t.skip('PostgreSQL is not reachable')
    return
  }
  const url = new URL(await createTestSchema(t))
  const warnings: string[] = []
  const durable = openPostgresStore(url.toString(), { poolSize: 1, onError: () => {}, onWarning: (message) => warnings.push(message) })
  t.after(() => durable.close())
  await durable.migrate()
  const serverWarnings = [...warnings]

  url.searchParams.set('options', `${url.searchParams.get('options') ?? ''} -c synchronous_commit=off`)
  const lossy = openPostgresStore(url.toString(), { poolSize: 1, onError: () => {}, onWarning: (message) => warnings.push(message) })
  t.after(() => lossy.close())
  await lossy.migrate()
  const added = warnings.slice(serverWarnings.length)
  assert.equal(added.filter((message) => /synchronous_commit=off/.test(message)).length, 1, JSON.stringify(added))
})
