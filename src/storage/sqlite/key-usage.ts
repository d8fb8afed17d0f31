import type Database from 'better-sqlite3'
import type { KeyUsageRepository, UsageCount, UsageOutcome } from '../store.js'
import { preparedOnFirstUse } from './statements.js'

const prepare = (db: Database.Database) => ({
  addUsage: db.prepare(`INSERT INTO key_usage (key_id, hour, operation, outcome, count) VALUES (?, ?, ?, ?, ?)
    ON CONFLICT (key_id, hour, operation, outcome) DO UPDATE SET count = count + excluded.count`),
  usageForKey: db.prepare('SELECT hour, operation, outcome, count FROM key_usage WHERE key_id = ? AND hour >= ? ORDER BY hour, operation, outcome'),
  deleteUsage: db.prepare('DELETE FROM key_usage WHERE hour < ?')
})

export function keyUsageRepository (db: Database.Database): KeyUsageRepository {
  const sql = preparedOnFirstUse(db, prepare)
  return {
    add: async (counts) => {
      db.transaction(() => {
        for (const { keyId, hour, operation, outcome, count } of counts) sql().addUsage.run(keyId, hour.getTime(), operation, outcome, count)
      }).immediate()
    },
    forKey: async (keyId, since) => (sql().usageForKey.all(keyId, since.getTime()) as Array<{ hour: number, operation: string, outcome: UsageOutcome, count: number }>)
      .map((row): UsageCount => ({ keyId, hour: new Date(row.hour), operation: row.operation, outcome: row.outcome, count: row.count })),
    deleteBefore: async (date) => sql().deleteUsage.run(date.getTime()).changes
  }
}
