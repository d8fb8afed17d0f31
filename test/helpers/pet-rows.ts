import Database from 'better-sqlite3'
import pg from 'pg'
import type { TestApp } from './build-app.js'

/**
 * Makes `id` the catalogue's last id, as an older version, a restore or a hand-made row could have
 * left it: an animal with that id, written with SQL beside the server (and, on PostgreSQL, the id
 * counter moved to it, as every write through the store moves it).
 */
export async function lastPetIdIs (testApp: TestApp, id: bigint): Promise<void> {
  if (testApp.store.engine === 'sqlite') {
    const db = new Database(testApp.dbPath)
    try {
      db.prepare('INSERT INTO pets (id, name, category_id, status, created_at) VALUES (?, ?, 1, NULL, 0)').run(id, 'Edge')
    } finally {
      db.close()
    }
    return
  }
  const client = new pg.Client({ connectionString: testApp.databaseUrl })
  await client.connect()
  try {
    await client.query('INSERT INTO pets (id, name, category_id, status, created_at) VALUES ($1, $2, 1, NULL, 0)', [id.toString(), 'Edge'])
    await client.query('UPDATE counters SET value = $1 WHERE name = \'pet_ids\'', [id.toString()])
  } finally {
    await client.end()
  }
}
