import { Type, type TSchema } from 'typebox'
import { errors, STATUS_BY_CODE, type ApiError, type ErrorCode } from '../../core/errors.js'
import { figure, MAX_BODY_BYTES } from '../../core/limits.js'
import { MAX_PET_ID } from '../../core/pets.js'
import { WWW_AUTHENTICATE, WWW_AUTHENTICATE_EXPIRED, WWW_AUTHENTICATE_INVALID } from '../headers.js'
import { RATE_LIMIT_HEADERS, RETRY_AFTER_HEADER, WWW_AUTHENTICATE_HEADER } from './headers.js'

/** A message may quote a field name of the request body (at most MAX_BODY_BYTES), so this bounds it with room to spare. */
const MAX_MESSAGE_LENGTH = 66_000

export const ErrorSchema = Type.Object({
  code: Type.Enum(Object.keys(STATUS_BY_CODE) as ErrorCode[], {
    type: 'string',
    description: 'Machine-readable error code.'
  }),
  message: Type.String({
    maxLength: MAX_MESSAGE_LENGTH,
    description: 'Human-readable description, naming the offending field or parameter. It may quote what the request sent.'
  }),
  status: Type.Integer({ format: 'int32', minimum: 400, maximum: 599, description: 'The HTTP status code of the response.' })
}, {
  $id: 'Error',
  additionalProperties: false,
  description: 'Every error of every route has this shape.',
  examples: [{ code: 'invalid_request', message: 'name is required', status: 400 }]
})

const ErrorRef = Type.Unsafe(Type.Ref('Error'))

/** One named example of an error response: what the server sends in one situation. */
export interface ErrorExample {
  summary: string
  code: ErrorCode
  message: string
}

/** Examples keyed by a short name; a status with several causes has one per cause. */
export type ErrorExamples = Record<string, ErrorExample>

/** The example of what the server sends in one situation, from the error the server builds for it. */
export function example (summary: string, error: ApiError): ErrorExample {
  return { summary, code: error.code, message: error.message }
}

/** The causes of a 503: every operation may meet them, the public document only the first two. */
export const UNAVAILABLE_EXAMPLES = {
  overloaded: example('Shedding load', errors.overloaded()),
  shuttingDown: example('Draining before a stop', errors.draining()),
  databaseUnavailable: example('The database is unreachable', errors.databaseUnavailable())
}

const DESCRIPTIONS: Record<number, string> = {
  400: 'The request is invalid; the message names the field or parameter.',
  401: 'The API key is missing, invalid, revoked or expired. Get a key in the [developer portal](/portal).',
  403: 'The API key is valid but lacks the scope this operation needs (insufficient_scope); the WWW-Authenticate header names the scope.',
  404: 'The requested resource could not be found.',
  409: 'A request with the same Idempotency-Key is still in flight (idempotency_key_in_use).',
  413: `The request body is larger than ${figure(MAX_BODY_BYTES)} bytes.`,
  415: 'The request body is not application/json (or has a Content-Encoding other than identity).',
  422: 'The Idempotency-Key was already used with a different request body (idempotency_key_reused).',
  429: 'Sent only when rate limiting is configured (RATE_LIMIT_PER_MINUTE): this API key made more requests in the ' +
    'current minute than the limit allows. Retry after Retry-After seconds.',
  501: 'The operation is not implemented.',
  507: `Every animal id up to 2^53 − 1 (${MAX_PET_ID}) is taken: no animal was created, and retrying will not help (insufficient_storage).`,
  503: 'The service cannot answer now: it is shedding load (its event loop lags), shutting down (draining), or its ' +
    'database is unreachable. Retry after Retry-After seconds; a create is safe to retry with an Idempotency-Key.'
}

/** The examples of statuses whose messages do not depend on the operation. */
const EXAMPLES: Record<number, ErrorExamples> = {
  401: {
    missingKey: example('No Authorization header', errors.keyRequired(WWW_AUTHENTICATE)),
    otherScheme: example('Another scheme than Bearer', errors.notBearer(WWW_AUTHENTICATE)),
    invalidKey: example('A key that is unknown or revoked', errors.invalidKey(WWW_AUTHENTICATE_INVALID)),
    expiredKey: example('A key past its expiry', errors.expiredKey(Date.parse('2026-12-01T00:00:00.000Z'), WWW_AUTHENTICATE_EXPIRED))
  },
  409: {
    inFlight: example('The first request with this key is still running', errors.idempotencyKeyInUse())
  },
  413: {
    tooLarge: example(`A body over ${figure(MAX_BODY_BYTES)} bytes`, errors.bodyTooLarge())
  },
  415: {
    notJson: example('A body that is not JSON', errors.notJson('text/plain')),
    encoded: example('A compressed body', errors.encodedBody('gzip'))
  },
  422: {
    reused: example('The key was used with another animal', errors.idempotencyKeyReused())
  },
  429: {
    rateLimited: example('Over the per-key limit', errors.rateLimited(100, 42))
  },
  507: {
    idsExhausted: example('No id is left to assign', errors.idsExhausted())
  },
  503: UNAVAILABLE_EXAMPLES
}

const HEADERS: Record<number, Record<string, object>> = {
  401: { 'WWW-Authenticate': WWW_AUTHENTICATE_HEADER },
  403: { 'WWW-Authenticate': WWW_AUTHENTICATE_HEADER },
  429: { 'Retry-After': RETRY_AFTER_HEADER, ...RATE_LIMIT_HEADERS },
  503: { 'Retry-After': RETRY_AFTER_HEADER }
}

/**
 * Response schemas for the given error statuses, spread into a route's `response`, each with the
 * examples of what the server sends: `own` gives the operation's own (every 400; a 404 or 501),
 * the rest come from the table above.
 */
export function errorResponses (statuses: number[], own: Record<number, ErrorExamples> = {}): Record<number, TSchema> {
  return Object.fromEntries(statuses.map((status) => {
    const examples = own[status] ?? EXAMPLES[status]
    if (examples === undefined) throw new Error(`no example for error status ${status}`)
    // The content form, which @fastify/swagger copies as it is: the examples stay beside the schema reference.
    return [status, {
      description: DESCRIPTIONS[status] ?? 'Error',
      ...(HEADERS[status] && { headers: HEADERS[status] }),
      content: {
        'application/json': {
          schema: ErrorRef,
          examples: Object.fromEntries(Object.entries(examples).map(([name, { summary, code, message }]) =>
            [name, { summary, value: { code, message, status } }]))
        }
      }
    }]
  }))
}

/** Adds the same response headers to every response of an operation. */
export function withHeaders<R extends Record<number, TSchema | object>> (responses: R, headers: Record<string, object>): R {
  return Object.fromEntries(Object.entries(responses).map(([status, response]) => [status, {
    ...response,
    headers: { ...(response as { headers?: object }).headers, ...headers }
  }])) as R
}

/**
 * The responses of an operation that takes an API key: its own, plus 429 and 503, and the
 * RateLimit fields on every answer to a counted request (all but 401, whose request had no
 * valid key, and 503, which may come before the count).
 */
export function keyedResponses<R extends Record<number, TSchema | object>> (responses: R): R {
  const all = { ...responses, ...errorResponses([429, 503]) }
  return Object.fromEntries(Object.entries(all).map(([status, response]) => [status,
    status === '401' || status === '503'
      ? response
      : { ...response, headers: { ...(response as { headers?: object }).headers, ...RATE_LIMIT_HEADERS } }
  ])) as R
}
