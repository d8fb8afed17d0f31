import type { KeyUsageRepository, UsageOutcome } from '../store.js'
import type { Connection } from './connection.js'

export function keyUsageRepository ({ query, onPool }: Connection): KeyUsageRepository {
  return {
    add: async (counts) => {
      if (counts.length === 0) return
      const values: unknown[] = []
      const tuples = counts.map(({ keyId, hour, operation, outcome, count }, index) => {
        values.push(keyId, hour.getTime(), operation, outcome, count)
        const at = index * 5
        return `($${at + 1}::text, $${at + 2}::bigint, $${at + 3}::text, $${at + 4}::text, $${at + 5}::bigint)`
      })
      // One statement: the rows of every instance meet in the upsert, which adds under the row lock.
      await query(`INSERT INTO key_usage AS u (key_id, hour, operation, outcome, count) VALUES ${tuples.join(', ')}
        ON CONFLICT (key_id, hour, operation, outcome) DO UPDATE SET count = u.count + excluded.count`, values)
    },
    forKey: async (keyId, since) =>
      (await query<{ hour: string, operation: string, outcome: UsageOutcome, count: string }>(
        'SELECT hour, operation, outcome, count FROM key_usage WHERE key_id = $1 AND hour >= $2 ORDER BY hour, operation, outcome', [keyId, since.getTime()]))
        .map((row) => ({ keyId, hour: new Date(Number(row.hour)), operation: row.operation, outcome: row.outcome, count: Number(row.count) })),
    deleteBefore: async (date) => (await onPool({ text: 'DELETE FROM key_usage WHERE hour < $1', values: [date.getTime()] })).rowCount ?? 0
  }
}
