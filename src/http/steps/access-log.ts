import type { Logger } from 'pino'
import type { Step } from '../pipeline.js'
import { requestLoggerOf } from './request-context.js'

/** Query values that look like an API key, and parameters named like a secret, whatever their value. */
const SECRET_IN_QUERY = /((?:^|[?&])(?:api_key|apikey|key|token|access_token|secret|password)=)[^&]*|ask_[0-9A-Za-z]+/gi

/** The URL as the access log writes it: SECURITY.md promises that keys are never logged. */
export function loggableUrl (url: string): string {
  const query = url.indexOf('?')
  if (query === -1 && !url.includes('ask_')) return url
  const redact = (match: string, name: string | undefined): string => (name === undefined ? '[redacted]' : `${name}[redacted]`)
  if (query === -1) return url.replace(SECRET_IN_QUERY, redact)
  return url.slice(0, query).replace(SECRET_IN_QUERY, redact) + url.slice(query).replace(SECRET_IN_QUERY, redact)
}

/**
 * One structured info line per request when it has been answered: request id, the caller's trace,
 * method, URL (secrets redacted), status and milliseconds. Written on the application's logger, whose
 * destination writes asynchronously (main.ts), so a line costs its serialisation and nothing more.
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
    }
  }
}
