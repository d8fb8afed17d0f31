import { STATUS_CODES, type IncomingMessage, type ServerResponse } from 'node:http'
import type { Duplex } from 'node:stream'
import type { Logger } from 'pino'
import { ApiError } from '../core/errors.js'
import { JSON_TYPE } from './headers.js'
import { UNSUPPORTED_TRANSFER_CODING } from './steps/message-framing.js'

/** While the parser refuses requests, one warning at most this often says how many and why. */
const WARNING_INTERVAL_MS = 10_000

const TIMED_OUT = new ApiError('request_timeout', 'the request did not arrive in time')
const HEADERS_TOO_LARGE = new ApiError('header_fields_too_large', 'the request\'s header fields are larger than the server takes')
const CONNECT_REFUSED = ApiError.invalidRequest('CONNECT is not supported: this server is no proxy')

/** The answer to an error of Node's HTTP parser, or undefined when there is nobody left to answer. */
function refusalOf (error: NodeJS.ErrnoException & { reason?: string }): ApiError | undefined {
  switch (error.code) {
    case 'ECONNRESET': return undefined
    case 'ERR_HTTP_REQUEST_TIMEOUT': return TIMED_OUT
    case 'HPE_HEADER_OVERFLOW': return HEADERS_TOO_LARGE
    case 'HPE_INVALID_TRANSFER_ENCODING': return UNSUPPORTED_TRANSFER_CODING
    default: return ApiError.invalidRequest(`the request is not valid HTTP/1.1${error.reason === undefined ? '' : `: ${error.reason}`}`)
  }
}

/** The refusal as bytes on the wire: the API's error shape, and the connection closed after it. */
function wireAnswer (error: ApiError): string {
  const body = JSON.stringify(error.toBody())
  return `HTTP/1.1 ${error.status} ${STATUS_CODES[error.status] ?? ''}\r\ncontent-type: ${JSON_TYPE}\r\ncontent-length: ${Buffer.byteLength(body)}\r\n` +
    `x-content-type-options: nosniff\r\nconnection: close\r\n\r\n${body}`
}

/** Whether an answer may still be written on the socket: it is open, and no byte of an answer in progress on it was sent. */
function answerable (socket: Duplex): boolean {
  // Node's own check before it writes its bare 400 (_http_server.js, socketOnError).
  const inProgress = (socket as Duplex & { _httpMessage?: ServerResponse | null })._httpMessage
  return socket.writable && (inProgress === undefined || inProgress === null || !inProgress.headersSent)
}

/**
 * What the server answers to requests Node's HTTP parser refuses before any route sees them (a
 * lower-case method, a NUL before it, a header name with a space, header fields too large, a
 * request that does not arrive in time) and to CONNECT: the API's error shape with Connection:
 * close where an answer can still be written, instead of the framework's own body or nothing. Each
 * refusal is counted (`count`, by status: the metrics) and logged as a warning, at most one line
 * every WARNING_INTERVAL_MS with the number refused since the previous one: a flood of garbage
 * must not flood the log.
 */
export function parserRefusals (log: Logger, count: (status: number) => void): {
  onClientError: (error: Error, socket: Duplex) => void
  onConnect: (request: IncomingMessage, socket: Duplex) => void
} {
  let refusedSinceWarning = 0
  let lastWarningAt = -Infinity

  function refuse (socket: Duplex, refusal: ApiError, cause: string | undefined): void {
    count(refusal.status)
    refusedSinceWarning++
    const now = Date.now()
    if (now - lastWarningAt >= WARNING_INTERVAL_MS) {
      lastWarningAt = now
      log.warn({ status: refusal.status, cause, refused: refusedSinceWarning }, 'refused requests that are not valid HTTP before any route')
      refusedSinceWarning = 0
    }
    if (!answerable(socket)) {
      socket.destroy()
      return
    }
    socket.end(wireAnswer(refusal), () => socket.destroy())
  }

  return {
    onClientError: function answerClientError (error, socket) {
      const refusal = socket.destroyed ? undefined : refusalOf(error)
      if (refusal === undefined) socket.destroy()
      else refuse(socket, refusal, (error as NodeJS.ErrnoException).code)
    },
    onConnect: function refuseConnect (_request, socket) {
      refuse(socket, CONNECT_REFUSED, 'CONNECT')
    }
  }
}
