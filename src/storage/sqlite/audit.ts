import type Database from 'better-sqlite3'
import type { AuditEvent, AuditEventType, AuditRepository } from '../store.js'
import { preparedOnFirstUse } from './statements.js'

interface AuditDbRow { id: number, at: number, event: AuditEventType, actor: AuditEvent['actor'], account_id: number | null, key_id: string | null, address: string | null, detail: string | null }
const AUDIT_COLUMNS = 'id, at, event, actor, account_id, key_id, address, detail'
const toAuditEvent = (row: AuditDbRow): AuditEvent => ({
  id: row.id, at: new Date(row.at), event: row.event, actor: row.actor, accountId: row.account_id, keyId: row.key_id, address: row.address, detail: row.detail
})

const prepare = (db: Database.Database) => ({
  appendAudit: db.prepare(`INSERT INTO audit_events (at, event, actor, account_id, key_id, address, detail, once)
    VALUES (@at, @event, @actor, @accountId, @keyId, @address, @detail, @once) ON CONFLICT (once) DO NOTHING`),
  auditPage: db.prepare(`SELECT ${AUDIT_COLUMNS} FROM audit_events WHERE account_id = ? AND id < ? ORDER BY id DESC LIMIT ?`)
})

export function auditRepository (db: Database.Database): AuditRepository {
  const sql = preparedOnFirstUse(db, prepare)
  return {
    append: async ({ at, event, actor, accountId, keyId, address, detail, once }) =>
      sql().appendAudit.run({ at: at.getTime(), event, actor, accountId, keyId, address, detail, once: once ?? null }).changes === 1,
    page: async (accountId, { limit, beforeId }) =>
      (sql().auditPage.all(accountId, beforeId ?? Number.MAX_SAFE_INTEGER, limit) as AuditDbRow[]).map(toAuditEvent)
  }
}
