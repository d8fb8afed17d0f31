import { describe, test, type TestContext } from 'node:test'
import assert from 'node:assert/strict'
import Database from 'better-sqlite3'
import pg from 'pg'
import { tempDir } from '../helpers/build-app.js'
import { runCrashTrials, type CrashFigures } from '../helpers/crash-trials.js'
import { createTestSchema, postgresAvailable } from '../helpers/postgres.js'
import { dbFile, seedApiKey } from '../helpers/server-process.js'
import { cliEnv, runCli } from '../helpers/spawn-cli.js'
import { canPin } from '../helpers/taskset.js'

// npm test runs 1 trial of each kind, enough to catch a change that loses writes at every kill; npm run reliability
// sets CRASH_TRIALS=50, to catch one that loses them only at some moments.
const TRIALS = Number(process.env.CRASH_TRIALS ?? 1)
const CLIENTS = 64
const FEW_CLIENTS = 4
// About 3 s a trial on a busy 2-core machine; the budget allows several times that.
const TIMEOUT_MS = 60_000 + TRIALS * 15_000

if (!Number.isSafeInteger(TRIALS) || TRIALS < 1) throw new Error(`CRASH_TRIALS=${process.env.CRASH_TRIALS} is not a positive integer`)

// Load shedding stays off: on a busy machine a restarted server's event loop can lag past
// the limit, and a 503 would then stand where the check needs the stored animal. Shedding
// has tests of its own (test/http/protection.test.ts); a shed create is never acknowledged.
const SERVER_ENV = { LOAD_SHED_EVENT_LOOP_DELAY_MS: '0' }

/** Prints the figures, the last line as JSON for scripts/reliability.ts. */
function report (t: TestContext, engine: string, clients: number, figures: CrashFigures, rows: number, oneCore = false): void {
  t.diagnostic(`${engine}${oneCore ? ' on one core' : ''}, ${clients} clients: ${figures.trials.length} trials, ${figures.acknowledged} creates acknowledged, ${figures.sent} sent, ` +
    `${figures.cut} cut by the kill, ${rows} rows (${rows - figures.acknowledged} committed without an acknowledgement), ${(figures.ms / 1000).toFixed(1)} s`)
  const { pets: _pets, ...totals } = figures
  t.diagnostic(`crash-figures ${JSON.stringify({ engine, clients, oneCore, rows, ...totals })}`)
}

/**
 * SIGKILL trials on a SQLite file; `clients` decides how large the group-committed batches get,
 * and `oneCore` pins the server to one CPU, where large batches are synced on the event loop
 * rather than on the thread pool.
 */
async function sqliteTrials (t: TestContext, clients: number, oneCore = false): Promise<void> {
  const dbPath = dbFile(tempDir(t))
  const key = await seedApiKey(dbPath)
  const integrity = (): unknown => {
    const db = new Database(dbPath, { readonly: true })
    try {
      return db.pragma('integrity_check', { simple: true })
    } finally {
      db.close()
    }
  }

  const { figures, server } = await runCrashTrials(t, {
    env: cliEnv(dbPath, SERVER_ENV),
    key,
    trials: TRIALS,
    clients,
    label: `sqlite ${clients} clients${oneCore ? ' on one core' : ''}`,
    cores: oneCore ? '0' : undefined,
    // The file as the kill left it, before the next server opens it.
    afterKill: (trial) => { assert.equal(integrity(), 'ok', `integrity_check after the kill of trial ${trial}`) }
  })

  server.child.kill('SIGTERM')
  assert.deepEqual(await server.exited, { code: 0, signal: null }, server.stderr())
  const db = new Database(dbPath)
  try {
    assert.equal(db.pragma('integrity_check', { simple: true }), 'ok')
    const { total: rows, unique_ids: uniqueIds } = db.prepare('SELECT count(*) AS total, count(DISTINCT id) AS unique_ids FROM pets').get() as { total: number, unique_ids: number }
    assert.equal(rows, uniqueIds, 'pet ids are unique')
    assert.ok(rows >= figures.acknowledged, `${rows} rows for ${figures.acknowledged} acknowledged animals`)
    report(t, 'sqlite', clients, figures, rows, oneCore)
  } finally {
    db.close()
  }
}

describe('crash durability', () => {
  test(`every create acknowledged with 201 survives SIGKILL at a random moment under ${CLIENTS} clients on SQLite (${TRIALS} trials), and integrity_check is ok`, { timeout: TIMEOUT_MS }, async (t) => {
    await sqliteTrials(t, CLIENTS)
  })

  test(`every create acknowledged with 201 survives SIGKILL at a random moment under ${CLIENTS} clients on SQLite pinned to one core (${TRIALS} trials), and integrity_check is ok`,
    { timeout: TIMEOUT_MS, skip: !canPin && 'taskset (util-linux) is not installed' }, async (t) => {
      await sqliteTrials(t, CLIENTS, true)
    })

  // Batches of a few creates are synced on libuv's thread pool, on one core too.
  test(`every create acknowledged with 201 survives SIGKILL at a random moment under ${FEW_CLIENTS} clients on SQLite (${TRIALS} trials), and integrity_check is ok`, { timeout: TIMEOUT_MS }, async (t) => {
    await sqliteTrials(t, FEW_CLIENTS)
  })

  test(`every create acknowledged with 201 survives SIGKILL at a random moment under ${CLIENTS} clients on PostgreSQL (${TRIALS} trials)`, { timeout: TIMEOUT_MS }, async (t) => {
    if (!await postgresAvailable()) {
      t.skip('PostgreSQL is not reachable')
      return
    }
    const databaseUrl = await createTestSchema(t)
    const env = { PATH: process.env.PATH ?? '', DATABASE_URL: databaseUrl, LOG_LEVEL: 'info', ...SERVER_ENV }
    const account = await runCli(['accounts', 'create', '--email', 'ops@example.com'], env)
    assert.equal(account.code, 0, account.stderr)
    const created = await runCli(['keys', 'create', '--email', 'ops@example.com'], env)
    assert.equal(created.code, 0, created.stderr)
    const key = created.stdout.trim().split('\n').at(-1) ?? ''

    const { figures, server } = await runCrashTrials(t, { env, key, trials: TRIALS, clients: CLIENTS, label: 'postgres' })

    server.child.kill('SIGTERM')
    assert.deepEqual(await server.exited, { code: 0, signal: null }, server.stderr())
    const client = new pg.Client({ connectionString: databaseUrl })
    await client.connect()
    try {
      const result = await client.query<{ total: string, unique_ids: string }>('SELECT count(*) AS total, count(DISTINCT id) AS unique_ids FROM pets')
      const rows = Number(result.rows[0]?.total)
      assert.equal(rows, Number(result.rows[0]?.unique_ids), 'pet ids are unique')
      assert.ok(rows >= figures.acknowledged, `${rows} rows for ${figures.acknowledged} acknowledged animals`)
      report(t, 'postgres', CLIENTS, figures, rows)
    } finally {
      await client.end()
    }
  })
})
