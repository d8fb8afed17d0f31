import type { FastifySchema } from 'fastify'
import type { Answer, Exchange } from './exchange.js'

/**
 * One operation of the API: the OpenAPI operation and its handler. The routing step finds it by
 * method and path, the validation step checks its input against `schema`, the handler step calls
 * `handle`, and the document describes it from the same `schema` (http/plugins/openapi.ts).
 */
export interface Operation {
  readonly operationId: string
  readonly method: 'GET' | 'POST'
  /** The path under /v1, with parameters as `:name` (`/pets/:petId`). */
  readonly url: string
  /**
   * What it takes (querystring, params, headers, body), what it answers (response), and its part of
   * the OpenAPI document: TypeBox schemas, compiled once for validation.
   */
  readonly schema: FastifySchema & { operationId: string, [extension: `x-${string}`]: unknown }
  /** Header fields of every answer on this operation's path, refusals included (getPet's deprecation). */
  readonly fields?: readonly string[]
  /**
   * Checks of the input as the client wrote it, before the schema's: the schema would accept
   * " 20" for an integer parameter once coerced, or a repeated parameter. May replace
   * `exchange.query` or `exchange.params` with the typed values the schema then checks.
   */
  readonly prepare?: (exchange: Exchange) => void
  /** Answers a request whose input is valid; `exchange.query`, `params` and `body` hold it. */
  readonly handle: (exchange: Exchange) => Answer | Promise<Answer>
}

/** The methods a path answers beyond its operations': HEAD like GET, and OPTIONS. */
export function allowedMethods (operations: readonly Operation[]): string {
  const methods: string[] = operations.map((operation) => operation.method)
  if (methods.includes('GET')) methods.push('HEAD')
  methods.push('OPTIONS')
  return [...new Set(methods)].join(', ')
}
