import { INT64_MAX, INT64_MIN } from './int64.js'
import { MAX_BODY_BYTES, MAX_PATH_SEGMENT_LENGTH, PAGE_SIZE } from './limits.js'
import { MAX_PET_ID } from './pets.js'

export const STATUS_BY_CODE = {
  invalid_request: 400,
  unauthorized: 401,
  insufficient_scope: 403,
  not_found: 404,
  method_not_allowed: 405,
  request_timeout: 408,
  payload_too_large: 413,
  idempotency_key_in_use: 409,
  unsupported_media_type: 415,
  idempotency_key_reused: 422,
  rate_limited: 429,
  header_fields_too_large: 431,
  internal_error: 500,
  not_implemented: 501,
  service_unavailable: 503,
  insufficient_storage: 507
} as const

export type ErrorCode = keyof typeof STATUS_BY_CODE

export interface ErrorBody {
  code: ErrorCode
  message: string
  status: number
}

/** An error whose message is safe to show to the client that caused it. */
export class ApiError extends Error {
  readonly code: ErrorCode
  readonly status: number
  readonly headers: Readonly<Record<string, string>>

  constructor (code: ErrorCode, message: string, headers: Record<string, string> = {}) {
    super(message)
    this.name = 'ApiError'
    this.code = code
    this.status = STATUS_BY_CODE[code]
    this.headers = headers
  }

  static invalidRequest (message: string): ApiError {
    return new ApiError('invalid_request', message)
  }

  static notFound (message: string): ApiError {
    return new ApiError('not_found', message)
  }

  static unsupportedMediaType (message: string): ApiError {
    return new ApiError('unsupported_media_type', message)
  }

  toBody (): ErrorBody {
    return { code: this.code, message: this.message, status: this.status }
  }
}

/** Retry-After of a refusal that lasts moments (load, a stop, the database). */
const RETRY_SHORTLY = { 'retry-after': '1' }

/** The longest part of a request a message quotes (a path, a media type). */
const QUOTED_PATH_LENGTH = 200
const QUOTED_MEDIA_TYPE_LENGTH = 100

/**
 * The catalogue of the errors a client sees, each written once: the steps, the framework's error
 * handler and the document's examples all build them here, from the limits they name.
 */
export const errors = {
  bodyTooLarge: () => new ApiError('payload_too_large', `the request body is larger than ${MAX_BODY_BYTES} bytes`),
  bodyEmpty: () => ApiError.invalidRequest('the request body is empty; send a JSON object'),
  bodyUnreadable: () => ApiError.invalidRequest('the request body could not be read'),
  contentLengthMismatch: () => ApiError.invalidRequest('Content-Length does not match the body sent'),
  malformedRequest: () => ApiError.invalidRequest('the request is malformed'),
  malformedUrl: () => ApiError.invalidRequest('the URL is malformed: it contains an invalid percent-encoding'),
  segmentTooLong: () => ApiError.invalidRequest(`a path segment is longer than ${MAX_PATH_SEGMENT_LENGTH} characters`),
  /** `mediaType`: the essence the request sent, if any. */
  notJson: (mediaType?: string) => ApiError.unsupportedMediaType(mediaType === undefined || mediaType === ''
    ? 'Content-Type must be application/json'
    : `Content-Type must be application/json, not ${mediaType.slice(0, QUOTED_MEDIA_TYPE_LENGTH)}`),
  encodedBody: (encoding: string) => ApiError.unsupportedMediaType(`Content-Encoding ${JSON.stringify(encoding)} is not supported; send the body unencoded`),
  charsetRepeated: () => ApiError.unsupportedMediaType('Content-Type names its charset more than once; send charset=utf-8 once'),
  charsetNotUtf8: () => ApiError.unsupportedMediaType('the request body must be UTF-8 (charset=utf-8)'),
  /** `meant`: the API path a mistyped one most likely meant. */
  noRoute: (method: string, path: string, meant?: string) =>
    ApiError.notFound(`no route matches ${method} ${path.slice(0, QUOTED_PATH_LENGTH)}${meant === undefined ? '' : `; did you mean ${meant}?`}`),
  /** `path`: the route's template ({petId}); `allow`: its methods, as the Allow field lists them. */
  methodNotAllowed: (method: string, path: string, allow: string) =>
    new ApiError('method_not_allowed', `${method} is not allowed on ${path}; allowed: ${allow}`, { allow }),
  limitOutOfRange: () => ApiError.invalidRequest(`query parameter limit must be an integer from ${PAGE_SIZE.minimum} to ${PAGE_SIZE.maximum}, written as digits`),
  invalidCursor: () => ApiError.invalidRequest('query parameter cursor is not valid; take it unchanged from the Link header of the previous page'),
  cursorOfOtherFilter: () => ApiError.invalidRequest('query parameter cursor was issued for another status filter; use it with the same status'),
  invalidPetId: () => ApiError.invalidRequest(`path parameter petId must be an integer from 1 to ${INT64_MAX}, written as digits`),
  categoryIdOutOfRange: () => ApiError.invalidRequest(`categoryId must be an integer between ${INT64_MIN} and ${INT64_MAX}`),
  noSuchPet: (petId: number | string) => ApiError.notFound(`no animal has id ${petId}`),
  invalidIdempotencyKey: () => ApiError.invalidRequest('header Idempotency-Key must be 1 to 255 visible ASCII characters, sent once'),
  idempotencyKeyReused: () => new ApiError('idempotency_key_reused', 'this Idempotency-Key was already used with a different animal; use a new key'),
  idempotencyKeyInUse: () => new ApiError('idempotency_key_in_use', 'a request with this Idempotency-Key is still being processed; retry shortly'),
  /** `challenge`: the WWW-Authenticate field of each 401. */
  keyRequired: (challenge: string) => new ApiError('unauthorized', 'an API key is required: send Authorization: Bearer <API_KEY>', { 'www-authenticate': challenge }),
  notBearer: (challenge: string) => new ApiError('unauthorized', 'the Authorization header must use the Bearer scheme', { 'www-authenticate': challenge }),
  invalidKey: (challenge: string) => new ApiError('unauthorized', 'the API key is invalid or has been revoked', { 'www-authenticate': challenge }),
  expiredKey: (expiresAt: number, challenge: string) =>
    new ApiError('unauthorized', `the API key expired at ${new Date(expiresAt).toISOString()}; create or roll a key in the developer portal`, { 'www-authenticate': challenge }),
  rateLimited: (limit: number, resetSeconds: number) =>
    new ApiError('rate_limited', `rate limit of ${limit} requests per minute exceeded; retry in ${resetSeconds} seconds`, { 'retry-after': String(resetSeconds) }),
  storeOrdersNotImplemented: () => new ApiError('not_implemented', 'store orders are not available in this version of the API'),
  overloaded: () => new ApiError('service_unavailable', 'the service is overloaded; retry shortly', RETRY_SHORTLY),
  draining: () => new ApiError('service_unavailable', 'the service is shutting down; retry shortly', RETRY_SHORTLY),
  metricsUnavailable: () => new ApiError('service_unavailable', 'the metrics of every worker could not be gathered; retry shortly', RETRY_SHORTLY),
  notReady: () => new ApiError('service_unavailable', 'the database does not answer', RETRY_SHORTLY),
  databaseUnavailable: () => new ApiError('service_unavailable', 'the database is unavailable; retry shortly', RETRY_SHORTLY),
  idsExhausted: () => new ApiError('insufficient_storage', `no animal was created: every id up to ${MAX_PET_ID} is taken`),
  unexpected: (requestId: string) => new ApiError('internal_error', `an unexpected error occurred; quote request id ${requestId} when reporting it`)
} as const
