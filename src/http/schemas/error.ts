import { Type, type TSchema } from 'typebox'
import { STATUS_BY_CODE, type ErrorCode } from '../../core/errors.js'

export const ErrorSchema = Type.Object({
  code: Type.Enum(Object.keys(STATUS_BY_CODE) as ErrorCode[], {
    type: 'string',
    description: 'Machine-readable error code.'
  }),
  message: Type.String({ description: 'Human-readable description, naming the offending field or parameter.' }),
  status: Type.Integer({ description: 'The HTTP status code of the response.' })
}, {
  $id: 'Error',
  additionalProperties: false,
  description: 'Every error of every route has this shape.',
  examples: [{ code: 'invalid_request', message: 'name is required', status: 400 }]
})

const ErrorRef = Type.Unsafe(Type.Ref('Error'))

const DESCRIPTIONS: Record<number, string> = {
  400: 'The request is invalid; the message names the field or parameter.',
  401: 'The API key is missing or invalid.',
  404: 'The requested resource could not be found.',
  409: 'A request with the same Idempotency-Key is still in flight (idempotency_key_in_use).',
  422: 'The Idempotency-Key was already used with a different request body (idempotency_key_reused).',
  413: 'The request body is larger than 65,536 bytes.',
  415: 'The request body is not application/json (or has a Content-Encoding other than identity).',
  501: 'The operation is not implemented.'
}

const HEADERS: Record<number, Record<string, unknown>> = {
  401: {
    'WWW-Authenticate': {
      type: 'string',
      description: 'Bearer realm="animal-store", with error="invalid_token" when a key was sent but is not valid (RFC 6750).'
    }
  }
}

/** Response schemas for the given error statuses, spread into a route's `response`. */
export function errorResponses (...statuses: number[]): Record<number, TSchema> {
  return Object.fromEntries(statuses.map((status) => [status, {
    ...ErrorRef,
    description: DESCRIPTIONS[status] ?? 'Error',
    ...(HEADERS[status] && { headers: HEADERS[status] })
  }]))
}

/** Adds the same response headers to every response of an operation. */
export function withHeaders<R extends Record<number, TSchema | object>> (responses: R, headers: Record<string, object>): R {
  return Object.fromEntries(Object.entries(responses).map(([status, response]) => [status, {
    ...response,
    headers: { ...(response as { headers?: object }).headers, ...headers }
  }])) as R
}
