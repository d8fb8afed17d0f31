import type { FastifyRequest } from 'fastify'
import { parse as parseContentType } from 'fast-content-type-parse'
import { ApiError } from '../../core/errors.js'
import { notFoundError } from '../errors.js'
import { MAX_BODY_BYTES, parseJsonBody } from '../json-body.js'
import { isApiRequest, type Step } from '../pipeline.js'

/** A body must arrive unencoded, as application/json in UTF-8: refused with 415 before a byte of it is read. */
function checkBodyHeaders (request: FastifyRequest): void {
  const encoding = request.headers['content-encoding']
  if (encoding !== undefined && encoding.trim().toLowerCase() !== 'identity') {
    throw ApiError.unsupportedMediaType(`Content-Encoding ${JSON.stringify(encoding)} is not supported; send the body unencoded`)
  }
  const contentType = request.headers['content-type']
  if (contentType === undefined) {
    // No body at all: the route's validation says a body is required.
    const { 'content-length': length, 'transfer-encoding': chunked } = request.headers
    if (chunked === undefined && (length === undefined || length === '0')) return
    throw ApiError.unsupportedMediaType('Content-Type must be application/json')
  }
  let mediaType: { type: string, parameters: Record<string, string> }
  try {
    mediaType = parseContentType(contentType)
  } catch {
    throw ApiError.unsupportedMediaType('Content-Type must be application/json')
  }
  if (mediaType.type !== 'application/json') throw ApiError.unsupportedMediaType(`Content-Type must be application/json, not ${mediaType.type.slice(0, 100)}`)
  const charset = mediaType.parameters.charset
  if (charset === undefined) return
  // The parser keeps the last of repeated parameters; a client that sends two means one of them.
  if (contentType.toLowerCase().split('charset').length > 2) throw ApiError.unsupportedMediaType('Content-Type names its charset more than once; send charset=utf-8 once')
  if (charset.toLowerCase() !== 'utf-8') throw ApiError.unsupportedMediaType('the request body must be UTF-8 (charset=utf-8)')
}

/**
 * Routing and validation. The router is Fastify's, and each route's schema validates its input
 * (compiled once). This step answers unknown paths with 404 as soon as the request is
 * authenticated (under /v1), before any body is read; checks an API body's headers before it is
 * read; only then tells a client that sent `Expect: 100-continue` to send its body; and parses
 * JSON bodies with Fastify's body reader, the size limit included. Outside the API, no route
 * reads a body but the portal's forms (whose plugin parses them): any other body is left unread.
 */
export function routing (): Step {
  return {
    name: 'routing and validation',
    scope: 'every request',
    setUp (app) {
      app.removeAllContentTypeParsers()
      app.addContentTypeParser('application/json', { parseAs: 'buffer', bodyLimit: MAX_BODY_BYTES }, function readJsonBody (request, body, done) {
        // The portal takes forms only: a JSON post there reads as no fields at all.
        if (!isApiRequest(request.url)) {
          done(null, undefined)
          return
        }
        try {
          done(null, parseJsonBody(body as Buffer))
        } catch (error) {
          done(error as Error, undefined)
        }
      })
      app.addContentTypeParser('*', function leaveBodyUnread (_request, _payload, done) {
        done(null, undefined)
      })
    },
    onRequest: function answerUnknownRoute (request, _reply, done) {
      done(request.is404 ? notFoundError(request) : undefined)
    },
    preParsing: function beforeTheBody (request, reply, payload, done) {
      // GET and HEAD take no body (Fastify reads none for them); an API request of any other method that gets this far does.
      if (request.method === 'GET' || request.method === 'HEAD' || !isApiRequest(request.url)) {
        done(null, payload)
        return
      }
      try {
        checkBodyHeaders(request)
      } catch (error) {
        done(error as Error, payload)
        return
      }
      // Node's automatic 100 Continue is off (the server's checkContinue listener): it is sent only
      // to a request that got this far, authenticated and routed.
      if (request.headers.expect?.toLowerCase() === '100-continue') reply.raw.writeContinue()
      done(null, payload)
    }
  }
}
