import type { FastifyBaseLogger, FastifyError, FastifyInstance, FastifyReply, FastifyRequest } from 'fastify'
import { ApiError, errors, STATUS_BY_CODE, type ErrorCode } from '../core/errors.js'
import { PetIdsExhaustedError, StoreUnavailableError } from '../storage/store.js'
import { JSON_TYPE } from './headers.js'

export { MAX_PATH_SEGMENT_LENGTH } from '../core/limits.js'

const CODE_BY_STATUS = new Map<number, ErrorCode>(
  Object.entries(STATUS_BY_CODE).map(([code, status]) => [status, code as ErrorCode])
)

/** The framework's own refusals, as the API words them. */
const FRAMEWORK_ERRORS: Record<string, () => ApiError> = {
  FST_ERR_CTP_BODY_TOO_LARGE: errors.bodyTooLarge,
  FST_ERR_CTP_EMPTY_JSON_BODY: errors.bodyEmpty,
  FST_ERR_CTP_INVALID_CONTENT_LENGTH: errors.contentLengthMismatch,
  FST_ERR_BAD_URL: errors.malformedUrl,
  FST_ERR_MAX_PARAM_LENGTH: errors.segmentTooLong
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
  if (fastifyError.code === 'FST_ERR_CTP_INVALID_MEDIA_TYPE') return errors.notJson(request.headers['content-type']?.split(';')[0]?.trim())
  const status = fastifyError.statusCode
  if (status !== undefined && status >= 400 && status < 500) {
    const known = FRAMEWORK_ERRORS[fastifyError.code]
    if (known !== undefined) return known()
    const code = CODE_BY_STATUS.get(status) ?? 'invalid_request'
    return code === 'invalid_request' ? errors.malformedRequest() : new ApiError(code, fastifyError.message)
  }
  if (status === 503) return errors.draining()
  return failureToApiError(error, request.log, request.id)
}

/**
 * A failure of the service itself (the database, a bug) as the ApiError the client sees,
 * logged to `log` (bound to the request), since the client learns nothing of it.
 */
export function failureToApiError (error: unknown, log: FastifyBaseLogger | undefined, requestId: string): ApiError {
  if (error instanceof StoreUnavailableError) {
    log?.warn({ err: error.reason }, 'database unavailable')
    return errors.databaseUnavailable()
  }
  if (error instanceof PetIdsExhaustedError) {
    // No retry helps: an operator must act (docs/decisions.md).
    log?.error({ err: error }, 'no animal id is left to assign')
    return errors.idsExhausted()
  }
  log?.error({ err: error }, 'unexpected error while serving the request')
  return errors.unexpected(requestId)
}

/** What knows the paths of the API, to name the one a mistyped path most likely meant. */
export interface PathHints { closestPath: (path: string) => string | undefined }

/** The 404 of a path that matches no route, the API's or the framework's: the path, and the API path it most likely meant. */
export function noRouteError (method: string, path: string, hints: PathHints): ApiError {
  return errors.noRoute(method, path, hints.closestPath(path))
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
