import type { AuditEvent, AuditEventType, AuditRepository } from '../store.js'
import type { Connection } from './connection.js'

interface AuditDbRow { id: string, at: string, event: AuditEventType, actor: AuditEvent['actor'], account_id: string | null, key_id: string | null, address: string | null, detail: string | null }
const AUDIT_COLUMNS = 'id, at, event, actor, account_id, key_id, address, detail'
const toAuditEvent = (row: AuditDbRow): AuditEvent => ({
  id: Number(row.id),
  at: new Date(Number(row.at)),
  event: row.event,
  actor: row.actor,
  accountId: row.account_id === null ? null : Number(row.account_id),
  keyId: row.key_id,
  address: row.address,
  detail: row.detail
})

export function auditRepository ({ query, onPool }: Connection): AuditRepository {
  return {
    append: async ({ at, event, actor, accountId, keyId, address, detail, once }) =>
      ((await onPool({
        text: `INSERT INTO audit_events (at, event, actor, account_id, key_id, address, detail, once) VALUES ($1, $2, $3, $4, $5, $6, $7, $8)
          ON CONFLICT (once) DO NOTHING`,
        values: [at.getTime(), event, actor, accountId, keyId, address, detail, once ?? null]
      })).rowCount ?? 0) === 1,
    page: async (accountId, { limit, beforeId }) =>
      (await query<AuditDbRow>(`SELECT ${AUDIT_COLUMNS} FROM audit_events WHERE account_id = $1 AND id < $2 ORDER BY id DESC LIMIT $3`,
        [accountId, beforeId ?? Number.MAX_SAFE_INTEGER, limit])).map(toAuditEvent)
  }
}
