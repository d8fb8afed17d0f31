import type { FastifyBaseLogger, FastifyError, FastifyInstance, FastifyReply, FastifyRequest } from 'fastify'
import { ApiError, STATUS_BY_CODE, type ErrorCode } from '../core/errors.js'
import { MAX_PET_ID } from '../core/pets.js'
import { PetIdsExhaustedError, StoreUnavailableError } from '../storage/store.js'
import { JSON_TYPE } from './headers.js'
import { MAX_BODY_BYTES } from './json-body.js'

/** The longest path segment the router takes; a longer one gets 400 naming this limit. */
export const MAX_PATH_SEGMENT_LENGTH = 2048

const CODE_BY_STATUS = new Map<number, ErrorCode>(
  Object.entries(STATUS_BY_CODE).map(([code, status]) => [status, code as ErrorCode])
)

const FRAMEWORK_MESSAGES: Record<string, string> = {
  FST_ERR_CTP_BODY_TOO_LARGE: `the request body is larger than ${MAX_BODY_BYTES} bytes`,
  FST_ERR_CTP_EMPTY_JSON_BODY: 'the request body is empty; send a JSON object',
  FST_ERR_CTP_INVALID_CONTENT_LENGTH: 'Content-Length does not match the body sent',
  FST_ERR_BAD_URL: 'the URL is malformed: it contains an invalid percent-encoding',
  FST_ERR_MAX_PARAM_LENGTH: `a path segment is longer than ${MAX_PATH_SEGMENT_LENGTH} characters`
}

function mediaTypeMessage (contentType: string | undefined): string {
  const essence = contentType?.split(';')[0]?.trim()
  return essence === undefined || essence === '' ? 'Content-Type must be application/json' : `Content-Type must be application/json, not ${essence.slice(0, 100)}`
}

/**
 * Sends the one error shape of the API from the framework's routes (outside /v1: the probes, the
 * metrics, an unknown path): exactly {code, message, status}, as errorAnswer writes it for the API.
 */
export function sendError (reply: FastifyReply, error: ApiError): FastifyReply {
  // An answer written before the body was read whole says Connection: close (the pipeline's answer).
  return reply
    .code(error.status)
    .headers(error.headers)
    .type(JSON_TYPE)
    .send(JSON.stringify(error.toBody()))
}

/** Maps anything thrown while serving a request onto an ApiError the client may see. */
export function toApiError (error: FastifyError | Error, request: FastifyRequest): ApiError {
  if (error instanceof ApiError) return error
  const fastifyError = error as FastifyError
  if (fastifyError.code === 'FST_ERR_CTP_INVALID_MEDIA_TYPE') return ApiError.unsupportedMediaType(mediaTypeMessage(request.headers['content-type']))
  const status = fastifyError.statusCode
  if (status !== undefined && status >= 400 && status < 500) {
    const code = CODE_BY_STATUS.get(status) ?? 'invalid_request'
    const message = FRAMEWORK_MESSAGES[fastifyError.code] ?? (code === 'invalid_request' ? 'the request is malformed' : fastifyError.message)
    return new ApiError(code, message)
  }
  if (status === 503) return new ApiError('service_unavailable', 'the service is shutting down; retry shortly', { 'retry-after': '1' })
  return failureToApiError(error, request.log, request.id)
}

/**
 * A failure of the service itself (the database, a bug) as the ApiError the client sees,
 * logged to `log` (bound to the request), since the client learns nothing of it.
 */
export function failureToApiError (error: unknown, log: FastifyBaseLogger | undefined, requestId: string): ApiError {
  if (error instanceof StoreUnavailableError) {
    log?.warn({ err: error.reason }, 'database unavailable')
    return new ApiError('service_unavailable', 'the database is unavailable; retry shortly', { 'retry-after': '1' })
  }
  if (error instanceof PetIdsExhaustedError) {
    // No retry helps: an operator must act (docs/decisions.md).
    log?.error({ err: error }, 'no animal id is left to assign')
    return new ApiError('insufficient_storage', `no animal was created: every id up to ${MAX_PET_ID} is taken`)
  }
  log?.error({ err: error }, 'unexpected error while serving the request')
  return new ApiError('internal_error', `an unexpected error occurred; quote request id ${requestId} when reporting it`)
}

/** What knows the paths of the API, to name the one a mistyped path most likely meant. */
export interface PathHints { closestPath: (path: string) => string | undefined }

/** The 404 of a path that matches no route, the API's or the framework's: the path, and the API path it most likely meant. */
export function noRouteError (method: string, path: string, hints: PathHints): ApiError {
  const meant = hints.closestPath(path)
  return ApiError.notFound(`no route matches ${method} ${path.slice(0, 200)}${meant === undefined ? '' : `; did you mean ${meant}?`}`)
}

export function notFoundError (request: FastifyRequest, hints: PathHints): ApiError {
  return noRouteError(request.method, request.url.split('?')[0] ?? '', hints)
}

/** The one error handler: set before any route, since each route keeps the handler it was given. */
export function registerErrorHandler (app: FastifyInstance): void {
  app.setErrorHandler(function handleError (error, request, reply) {
    return sendError(reply, toApiError(error as Error, request))
  })
}

/**
 * The not-found handler (the pipeline's routing step answers unknown routes before it): set after
 * the pipeline, since Fastify gives it the hooks that exist when it is set.
 */
export function registerNotFoundHandler (app: FastifyInstance, hints: PathHints): void {
  app.setNotFoundHandler(function notFound (request, reply) {
    return sendError(reply, notFoundError(request, hints))
  })
}
