import { randomBytes } from 'node:crypto'

export interface TraceContext {
  traceId: string
  parentSpanId: string
  /** This service's own span within the trace. */
  spanId: string
  sampled: boolean
}

const TRACEPARENT = /^([0-9a-f]{2})-([0-9a-f]{32})-([0-9a-f]{16})-([0-9a-f]{2})(-.*)?$/

/**
 * Reads a W3C Trace Context `traceparent` header (version 00, or a later version read as 00).
 * Invalid headers are ignored, as the recommendation requires: undefined.
 */
export function parseTraceparent (header: string | undefined): TraceContext | undefined {
  if (header === undefined) return undefined
  const match = TRACEPARENT.exec(header.trim().toLowerCase())
  if (!match) return undefined
  const [, version = '', traceId = '', parentSpanId = '', flags = '', rest] = match
  if (version === 'ff' || (version === '00' && rest !== undefined)) return undefined
  if (/^0+$/.test(traceId) || /^0+$/.test(parentSpanId)) return undefined
  return { traceId, parentSpanId, spanId: randomBytes(8).toString('hex'), sampled: (Number.parseInt(flags, 16) & 1) === 1 }
}
