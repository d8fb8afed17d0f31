import { createHmac, timingSafeEqual } from 'node:crypto'
import { LRUCache } from 'lru-cache'

/**
 * Keyset cursors: the id of the last animal of the previous page and the status filter
 * it was made for, signed so that a client cannot forge a position or reuse a cursor
 * under another filter without the server noticing.
 */
export interface CursorPosition {
  afterId: number
  status: string | undefined
}

export class InvalidCursorError extends Error {}

const MAC_BYTES = 16

/** The shape of every cursor this codec issues, as the OpenAPI document states it; decode refuses anything else. */
export const CURSOR_TEXT = { maxLength: 200, pattern: '^[A-Za-z0-9_-]+\\.[A-Za-z0-9_-]+$' } as const

export interface CursorCodec {
  encode (position: CursorPosition): string
  /** Throws InvalidCursorError for anything this server did not issue. */
  decode (cursor: string): CursorPosition
}

/** Cursors are deterministic, so the hot ones (page boundaries everyone follows) are signed and checked once. */
const MEMO_ENTRIES = 10_000

export function createCursorCodec (secret: string): CursorCodec {
  const mac = (payload: string): Buffer =>
    createHmac('sha256', secret).update(payload).digest().subarray(0, MAC_BYTES)
  const encoded = new LRUCache<string, string>({ max: MEMO_ENTRIES })
  const decoded = new LRUCache<string, CursorPosition>({ max: MEMO_ENTRIES })

  return {
    encode ({ afterId, status }) {
      const payload = `${afterId}.${status ?? ''}`
      let cursor = encoded.get(payload)
      if (cursor === undefined) {
        cursor = `${Buffer.from(payload).toString('base64url')}.${mac(payload).toString('base64url')}`
        encoded.set(payload, cursor)
      }
      return cursor
    },
    decode (cursor) {
      const known = decoded.get(cursor)
      if (known !== undefined) return known
      const position = verify(cursor)
      decoded.set(cursor, position)
      return position
    }
  }

  function verify (cursor: string): CursorPosition {
    const parts = cursor.split('.')
    if (parts.length !== 2 || cursor.length > CURSOR_TEXT.maxLength) throw new InvalidCursorError('malformed')
    const [encodedPayload = '', encodedMac = ''] = parts
    const payloadBytes = Buffer.from(encodedPayload, 'base64url')
    const presented = Buffer.from(encodedMac, 'base64url')
    // Node's decoder skips characters outside the alphabet and ignores spare bits, so
    // several spellings decode alike: only the one this codec writes is accepted.
    if (payloadBytes.toString('base64url') !== encodedPayload || presented.toString('base64url') !== encodedMac) {
      throw new InvalidCursorError('not canonical base64url')
    }
    const payload = payloadBytes.toString()
    if (presented.length !== MAC_BYTES || !timingSafeEqual(presented, mac(payload))) {
      throw new InvalidCursorError('signature mismatch')
    }
    const match = /^([1-9][0-9]{0,15})\.([a-z]*)$/.exec(payload)
    const afterId = match ? Number(match[1]) : NaN
    if (!match || !Number.isSafeInteger(afterId)) throw new InvalidCursorError('malformed payload')
    return { afterId, status: match[2] === '' ? undefined : match[2] }
  }
}
