import type { Logger } from 'pino'
import type { Step } from '../pipeline.js'

/** Query values that look like an API key, and parameters named like a secret, whatever their value. */
const SECRET_IN_QUERY = /((?:^|[?&])(?:api_key|apikey|key|token|access_token|secret|password)=)[^&]*|ask_[0-9A-Za-z]+/gi

/** Words in a query that may name a secret: without any of them, nothing in it needs redacting. */
const SECRET_WORDS = ['key', 'token', 'secret', 'password', 'ask_']

/** The URL as the access log writes it: SECURITY.md promises that keys are never logged. */
export function loggableUrl (url: string): string {
  const query = url.indexOf('?')
  if (query === -1) return url.includes('ask_') ? url.replace(SECRET_IN_QUERY, redact) : url
  const lower = url.toLowerCase()
  if (!SECRET_WORDS.some((word) => lower.includes(word, query))) return url.includes('ask_') ? url.replace(SECRET_IN_QUERY, redact) : url
  return url.slice(0, query).replace(SECRET_IN_QUERY, redact) + url.slice(query).replace(SECRET_IN_QUERY, redact)
}

function redact (_match: string, name: string | undefined): string {
  return name === undefined ? '[redacted]' : `${name}[redacted]`
}

/**
 * One structured info line per request once it is over: request id, the caller's trace, method,
 * URL (secrets redacted), status and milliseconds; a client that went away before its answer (in
 * the middle of its body, say) is a line of its own, no failure of the service. Written on the
 * service's logger, whose destination gathers lines and writes them in batches
 * (services/log-destination.ts), so a line costs its serialisation and a push onto an array.
 */
export function accessLog (log: Logger): Step {
  return {
    name: 'access log',
    scope: 'every request',
    onDone: function writeAccessLog (exchange) {
      if (!log.isLevelEnabled('info')) return
      const url = loggableUrl(exchange.url)
      // The caller's trace, when it sent one: most requests carry none, and their line is a plain literal.
      const trace = exchange.headers.traceparent === undefined ? undefined : exchange.log.traceContext()
      if (exchange.abandoned) {
        log.info({ requestId: exchange.id, ...trace, method: exchange.method, url }, 'the client went away before its request was answered')
        return
      }
      const ms = Math.round(exchange.elapsedMs() * 100) / 100
      if (trace === undefined) log.info({ requestId: exchange.id, method: exchange.method, url, statusCode: exchange.statusCode, ms }, 'request completed')
      else log.info({ requestId: exchange.id, ...trace, method: exchange.method, url, statusCode: exchange.statusCode, ms }, 'request completed')
    }
  }
}
