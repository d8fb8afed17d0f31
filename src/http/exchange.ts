import type { IncomingHttpHeaders, IncomingMessage, ServerResponse } from 'node:http'
import type { Span } from '@opentelemetry/api'
import type { Logger } from 'pino'
import type { ApiError } from '../core/errors.js'
import type { VerifiedKey } from '../services/key-verifier.js'
import { JSON_TYPE } from './headers.js'
import type { Routed } from './api-routes.js'
import type { Operation } from './operation.js'
import { RequestLogger } from './request-logger.js'

/**
 * An answer to write: the status, the answer's own header fields as a flat list (name, value,
 * name, value …: what `writeHead` takes), and the body, absent for a 304, a 204 or a HEAD. A cached
 * page or animal keeps the same list for as long as it is cached.
 */
export interface Answer {
  readonly statusCode: number
  readonly headers: readonly string[]
  readonly body: Buffer | string | undefined
}

/**
 * An answer that other code writes on the response itself: the framework's, for the requests
 * outside /v1 (the portal, the reference page, the probes, the metrics).
 */
export interface HandedOver {
  readonly writtenBy: (request: IncomingMessage, response: ServerResponse) => void
}

/**
 * One request and what the steps learn about it on its way through the pipeline
 * (src/http/pipeline.ts): one object per request, holding no more than the steps need.
 */
export class Exchange {
  /** The request id (X-Request-Id), set by the first step. */
  id = ''
  /** The path as the router reads it, without the query. */
  readonly path: string
  /** The verified key (authentication); null for the public document and outside /v1. */
  key: VerifiedKey | null = null
  /** The operation the request names (routing): undefined until routed, and for a path or method that names none. */
  operation: Operation | undefined = undefined
  /** What the router found for the request, once asked (api-routes.ts). */
  routed: Routed | undefined = undefined
  /** The framework's route template, for a request it answered (`/portal/keys/:id`); undefined when none matched. */
  frameworkRoute: string | undefined = undefined
  /** Validated input of the operation (validation). */
  params: unknown = undefined
  query: unknown = undefined
  body: unknown = undefined
  /** Header fields of whatever answer is given (name, value …), added by the steps as the request goes. */
  readonly fields: string[] = []
  /** The status the answer was given, once given. */
  statusCode = 0
  /** The request's trace span, when tracing is on and the sampler kept the request (steps/tracing.ts). */
  span: Span | undefined = undefined
  /** The client went away before its answer was written. */
  abandoned = false
  /** The answer closes the connection (Connection: close) whatever else it says: set by a step as it answers. */
  closesConnection = false
  private bound: RequestLogger | undefined

  constructor (
    readonly request: IncomingMessage,
    readonly response: ServerResponse,
    /** The URL as the steps read it (under /v1, with undecodable escapes escaped: tolerant-url.ts). */
    readonly url: string,
    readonly isApi: boolean,
    /** performance.now() when the request arrived. */
    readonly startedAt: number,
    private readonly root: Logger
  ) {
    const query = url.indexOf('?')
    this.path = query === -1 ? url : url.slice(0, query)
  }

  /** The request's logger, bound to its id and trace (its span's, when traced), made on first use: most requests log nothing but their access-log line. */
  get log (): RequestLogger {
    if (this.bound === undefined) {
      const traceparent = this.request.headers.traceparent
      this.bound = new RequestLogger(this.root, this.id, typeof traceparent === 'string' ? traceparent : undefined, this.span)
    }
    return this.bound
  }

  get method (): string {
    return this.request.method ?? 'GET'
  }

  get headers (): IncomingHttpHeaders {
    return this.request.headers
  }

  /** Adds a header field to whatever answer the request gets. */
  header (name: string, value: string): void {
    this.fields.push(name, value)
  }

  /** Milliseconds since the request arrived. */
  elapsedMs (): number {
    return performance.now() - this.startedAt
  }
}

/** The exchange of each request the handler step handed to the framework, for the framework's side of the steps (its request id, its route). */
export const handedOver = new WeakMap<IncomingMessage, Exchange>()

/** Whether the request announced a body (a request without one is complete once its headers are). */
export function announcesBody (headers: IncomingHttpHeaders): boolean {
  const length = headers['content-length']
  return headers['transfer-encoding'] !== undefined || (length !== undefined && length !== '0')
}

/** Whether the request announced a body that has not been read whole: its connection cannot carry another request. */
export function bodyLeftUnread (request: IncomingMessage): boolean {
  return !request.complete && announcesBody(request.headers)
}

/** The one error shape of the API: exactly {code, message, status}. */
export function errorAnswer (error: ApiError): Answer {
  const body = JSON.stringify(error.toBody())
  const headers = ['content-type', JSON_TYPE, 'content-length', String(Buffer.byteLength(body))]
  for (const name in error.headers) headers.push(name, error.headers[name] as string)
  return { statusCode: error.status, headers, body }
}

/** A JSON answer with its length. */
export function jsonAnswer (statusCode: number, body: string, headers: readonly string[] = []): Answer {
  return { statusCode, headers: ['content-type', JSON_TYPE, 'content-length', String(Buffer.byteLength(body)), ...headers], body }
}

/** An answer without a body (204). */
export function emptyAnswer (statusCode: number, headers: readonly string[]): Answer {
  return { statusCode, headers, body: undefined }
}
