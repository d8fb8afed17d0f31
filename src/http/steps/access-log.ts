import type { Logger } from 'pino'
import type { Step } from '../pipeline.js'
import { requestLoggerOf } from './request-context.js'

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
 * One structured info line per request when it has been answered: request id, the caller's trace,
 * method, URL (secrets redacted), status and milliseconds. Written on the application's logger, whose
 * destination gathers lines and writes them in batches (services/log-destination.ts), so a line
 * costs its serialisation and a push onto an array.
 */
export function accessLog (): Step {
  return {
    name: 'access log',
    scope: 'every request',
    onResponse: function writeAccessLog (request, reply, done) {
      const log = request.server.log as Logger
      if (log.isLevelEnabled('info')) {
        const trace = requestLoggerOf(request).traceContext()
        log.info({
          requestId: request.id,
          ...trace,
          method: request.method,
          url: loggableUrl(request.url),
          statusCode: reply.statusCode,
          ms: Math.round(reply.elapsedTime * 100) / 100
        }, 'request completed')
      }
      done()
    },
    // A client that closes its connection in the middle of its request is an event of its own, no failure of the service.
    onRequestAbort: function logAbandoned (request, done) {
      const log = request.server.log as Logger
      if (log.isLevelEnabled('info')) {
        log.info({ requestId: request.id, ...requestLoggerOf(request).traceContext(), method: request.method, url: loggableUrl(request.url) },
          'the client went away before its request was answered')
      }
      done()
    }
  }
}
