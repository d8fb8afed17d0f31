import { symbols, type Logger } from 'pino'
import { API_KEY_PREFIX, holdsKeyShape, redactKeyShapes } from '../../core/api-keys.js'
import type { Step } from '../pipeline.js'

/** Query parameters named like a secret: their values are redacted whatever they are. */
const SECRET_NAME = /^(?:api_key|apikey|key|token|access_token|secret|password)$/i
const REDACTED = '[redacted]'

/**
 * The URL as the access log writes it (and the request's span records it): SECURITY.md promises
 * that keys are never logged. A plain URL (NOT_PLAIN), as most are, holds nothing to redact and
 * is taken as it is, without being split.
 */
export function loggableUrl (url: string): string {
  if (!NOT_PLAIN.test(url)) return url
  const query = url.indexOf('?')
  const path = (query === -1 ? url : url.slice(0, query)).split('/').map(loggablePart).join('/')
  return query === -1 ? path : `${path}?${url.slice(query + 1).split('&').map(loggableParameter).join('&')}`
}

function loggableParameter (parameter: string): string {
  const equals = parameter.indexOf('=')
  if (equals === -1) return loggablePart(parameter)
  const name = parameter.slice(0, equals)
  if (SECRET_NAME.test(asciiDecoded(name))) return `${name}=${REDACTED}`
  return `${loggablePart(name)}=${loggablePart(parameter.slice(equals + 1))}`
}

/**
 * A path segment, or a name or value of the query, with any key in it redacted, as written or
 * percent-encoded (`ask%5F…`), since whoever reads the log, or the server, decodes it. An encoded
 * key's part is redacted whole: where the key begins among escapes is not worth finding.
 */
function loggablePart (raw: string): string {
  const decoded = asciiDecoded(raw)
  if (!holdsKeyShape(decoded)) return raw
  return decoded === raw ? redactKeyShapes(raw, REDACTED) : REDACTED
}

/** The ASCII escapes decoded (all that a key or a secret's name is made of): it never fails, as decodeURIComponent can. */
function asciiDecoded (text: string): string {
  return text.includes('%') ? text.replace(/%([0-7][0-9A-Fa-f])/g, (_escape, hex: string) => String.fromCharCode(parseInt(hex, 16))) : text
}

/**
 * What makes a URL more than a string to put between quotes: any character but printable ASCII
 * other than `"` and `\` (all that JSON escapes is among them), a `%` (an escape may hide a key),
 * or a word that may name a secret. Most URLs have none, and one scan of the URL says so.
 */
const NOT_PLAIN = new RegExp(`[^\\x20\\x21\\x23\\x24\\x26-\\x5b\\x5d-\\x7e]|key|token|secret|password|${API_KEY_PREFIX}`, 'i')

/** The URL as the line's JSON string, secrets redacted. */
function urlField (url: string): string {
  return NOT_PLAIN.test(url) ? JSON.stringify(loggableUrl(url)) : `"${url}"`
}

const { chindingsSym, streamSym, timeSym } = symbols

/** The logger's own parts a line is written with (pino.symbols: for performant integrations). */
function internalsOf (log: Logger): { time: () => string, bindings: () => string, write: (line: string) => void } {
  const own = log as unknown as Record<symbol, unknown>
  return {
    // `,"time":…`, as the logger's timestamp option writes it.
    time: () => (own[timeSym] as () => string).call(log),
    // The logger's bindings, serialised once by pino: `,"pid":…,"hostname":"…"` and any child's.
    bindings: () => own[chindingsSym] as string,
    write: (line) => { (own[streamSym] as { write: (line: string) => void }).write(line) }
  }
}

/**
 * One structured info line per request once it is over: request id, the caller's trace, method,
 * URL (secrets redacted), status and milliseconds; a client that went away before its answer (in
 * the middle of its body, say) is a line of its own, no failure of the service. The line is the
 * logger's own (its level, its timestamp, its bindings, its destination), written as pino writes one.
 *
 * Speed code (docs/performance.md): a template, since pino's serialisation of a fields object costs more than the rest of the line.
 */
export function accessLog (log: Logger): Step {
  const internals = internalsOf(log)
  const level = log.levels.values.info
  return {
    name: 'access log',
    scope: 'every request',
    onDone: function writeAccessLog (exchange) {
      if (!log.isLevelEnabled('info')) return
      const head = `{"level":${level}${internals.time()}${internals.bindings()},"requestId":"${exchange.id}"`
      // The request's trace: its span's when tracing kept it, else the caller's when it sent one (most requests carry none).
      const fields = exchange.span === undefined && exchange.headers.traceparent === undefined ? undefined : exchange.log.traceContext()
      const trace = fields === undefined ? '' : `,"traceId":"${fields.traceId}","spanId":"${fields.spanId}"${fields.parentSpanId === undefined ? '' : `,"parentSpanId":"${fields.parentSpanId}"`}`
      // Which catalogue answered: a test key's sandbox says so; live requests carry no field (it costs them nothing).
      const key = exchange.key
      const request = `,"method":"${exchange.method}","url":${urlField(exchange.url)}${key !== null && key.test ? ',"mode":"test"' : ''}`
      const line = exchange.abandoned
        ? `${head}${trace}${request},"msg":"the client went away before its request was answered"}\n`
        : `${head}${trace}${request},"statusCode":${exchange.statusCode},"ms":${Math.round(exchange.elapsedMs() * 100) / 100},"msg":"request completed"}\n`
      internals.write(line)
    }
  }
}
