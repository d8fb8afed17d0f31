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
