import type { Scope } from '../core/api-keys.js'
import type { MailLinks } from './mail-messages.js'
import type { AuditActor, AuditEventType, AuditRepository, NewAuditEvent } from '../storage/store.js'

const HOUR_MS = 3_600_000
/** Keys this instance remembers having recorded an event for, so repeated refusals cost no write. */
const MAX_REMEMBERED = 10_000

export interface AuditContext {
  actor: AuditActor
  /** The client's address; absent for the CLI. */
  address?: string | undefined
  /** Where the links of the security mail the change causes point (DEFAULT_LINKS when absent). */
  links?: MailLinks | undefined
}

/**
 * Appends account and key events to the audit trail (docs/api-keys.md). Events of the API's
 * requests (an expired key presented, a scope denied) are recorded once per key (per hour, for a
 * scope denied) across every instance, through the store's `once` text, and each instance
 * remembers what it recorded so that a client repeating the request costs no database write.
 */
export class AuditTrail {
  private readonly recorded = new Set<string>()

  constructor (private readonly audit: AuditRepository, private readonly onError: (error: unknown) => void) {}

  /** A key presented after its expiry: recorded the first time any instance refuses it. */
  keyExpired (key: { keyId: string, accountId: number, expiresAt: number }, address: string): void {
    this.once(`key_expired:${key.keyId}`, auditEvent('key_expired', { actor: 'api', address }, {
      accountId: key.accountId, keyId: key.keyId, detail: `expired at ${new Date(key.expiresAt).toISOString()}`
    }))
  }

  /** A key refused for a scope it lacks: at most one event per key per hour. */
  scopeDenied (key: { keyId: string, accountId: number }, scope: Scope, operation: string, address: string): void {
    const hour = Math.floor(Date.now() / HOUR_MS)
    this.once(`scope_denied:${key.keyId}:${hour}`, auditEvent('scope_denied', { actor: 'api', address }, {
      accountId: key.accountId, keyId: key.keyId, detail: `${operation} needs ${scope}`
    }))
  }

  private once (text: string, event: NewAuditEvent): void {
    if (this.recorded.has(text)) return
    if (this.recorded.size >= MAX_REMEMBERED) this.recorded.clear()
    this.recorded.add(text)
    this.audit.append({ ...event, once: text }).catch((error: unknown) => {
      this.recorded.delete(text)
      this.onError(error)
    })
  }
}

export interface AuditIds { accountId: number | null, keyId?: string | null, detail?: string | null }

function auditEvent (event: AuditEventType, context: AuditContext, ids: AuditIds): NewAuditEvent {
  return { at: new Date(), event, actor: context.actor, address: context.address ?? null, accountId: ids.accountId, keyId: ids.keyId ?? null, detail: ids.detail ?? null }
}

/** Appends one event and waits for it: the CLI's and the portal's changes are recorded before they answer. */
export async function appendAuditEvent (audit: AuditRepository, event: AuditEventType, context: AuditContext, ids: AuditIds): Promise<void> {
  await audit.append(auditEvent(event, context, ids))
}
