import type { FastifyInstance, FastifyRequest } from 'fastify'
import { parse as parseContentType } from 'fast-content-type-parse'
import { parse as parseLossless, isLosslessNumber } from 'lossless-json'
import secureJson from 'secure-json-parse'
import { ApiError } from '../../core/errors.js'
import { IntegerLiteral, scanFlatObject, type FlatMember } from '../../core/flat-json.js'
import { parseInt64Literal } from '../../core/int64.js'

export const MAX_BODY_BYTES = 65_536

/** Where the exact value of a categoryId travels from the parser to the handler (a double cannot hold it beyond 2^53). */
export const EXACT_CATEGORY_ID = Symbol('exactCategoryId')

const utf8 = new TextDecoder('utf-8', { fatal: true })

function payloadTooLarge (): ApiError {
  return new ApiError('payload_too_large', `the request body is larger than ${MAX_BODY_BYTES} bytes`)
}

/** Refuses anything but an unencoded application/json body in UTF-8, before reading it. */
function checkHeaders (request: FastifyRequest): void {
  const encoding = request.headers['content-encoding']
  if (encoding !== undefined && encoding.trim().toLowerCase() !== 'identity') {
    throw ApiError.unsupportedMediaType(`Content-Encoding ${JSON.stringify(encoding)} is not supported; send the body unencoded`)
  }
  const contentType = request.headers['content-type']
  if (contentType === undefined) throw ApiError.unsupportedMediaType('Content-Type must be application/json')
  let mediaType: { type: string, parameters: Record<string, string> }
  try {
    mediaType = parseContentType(contentType)
  } catch {
    throw ApiError.unsupportedMediaType('Content-Type must be application/json')
  }
  if (mediaType.type !== 'application/json') {
    throw ApiError.unsupportedMediaType(`Content-Type must be application/json, not ${mediaType.type}`)
  }
  const charset = mediaType.parameters.charset
  if (charset !== undefined && charset.toLowerCase() !== 'utf-8') {
    throw ApiError.unsupportedMediaType('the request body must be UTF-8 (charset=utf-8)')
  }
  const declaredLength = Number(request.headers['content-length'])
  if (declaredLength > MAX_BODY_BYTES) throw payloadTooLarge()
}

/**
 * Parses a JSON body without losing anything: invalid UTF-8 is refused rather than
 * replaced, prototype keys are refused, and a numeric categoryId is read from its
 * literal, so it is kept exactly or refused, never rounded.
 */
export function parseJsonBody (bytes: Buffer): unknown {
  if (bytes.length === 0) throw ApiError.invalidRequest('the request body is empty; send a JSON object')
  let text: string
  try {
    text = utf8.decode(bytes)
  } catch {
    throw ApiError.invalidRequest('the request body is not valid UTF-8')
  }
  const members = scanFlatObject(text)
  return members !== undefined && !members.has('__proto__') ? flatBody(members) : parseInFull(text)
}

/** The object JSON.parse would give for a flat body, with categoryId read exactly from its digits. */
function flatBody (members: Map<string, FlatMember>): Record<string | symbol, unknown> {
  const body: Record<string | symbol, unknown> = {}
  for (const [key, member] of members) {
    if (!(member instanceof IntegerLiteral)) body[key] = member
    else if (key !== 'categoryId') body[key] = Number(member.text)
    // Fifteen characters, sign included, are at most fifteen digits: exact as a double (+ 0 turns -0 into 0, as the exact path does).
    else if (member.text.length <= 15) body.categoryId = Number(member.text) + 0
    else setExactCategoryId(body, member.text)
  }
  return body
}

function parseInFull (text: string): unknown {
  let value: unknown
  try {
    value = secureJson.parse(text, undefined, { protoAction: 'error', constructorAction: 'error' })
  } catch (error) {
    const forbidden = /prototype/i.test((error as Error).message)
    throw ApiError.invalidRequest(forbidden
      ? 'the request body must not contain __proto__ or constructor.prototype keys'
      : `the request body is not valid JSON: ${(error as Error).message}`)
  }
  const body = value as Record<string | symbol, unknown>
  if (typeof value === 'object' && value !== null && !Array.isArray(value)) {
    // CONTRACT.md: a categoryId round-trips exactly or is refused. JSON.parse has already
    // rounded it (1.0000000000000001 became 1), so its literal is read again, digit for digit.
    if (typeof body.categoryId === 'number') setExactCategoryId(body, categoryIdLiteral(text))
  }
  return value
}

function setExactCategoryId (body: Record<string | symbol, unknown>, literal: string | undefined): void {
  const exact = literal === undefined ? undefined : parseInt64Literal(literal)
  if (exact === undefined) {
    throw ApiError.invalidRequest('categoryId must be an integer between -9223372036854775808 and 9223372036854775807')
  }
  body.categoryId = Number(exact)
  if (!Number.isSafeInteger(body.categoryId)) body[EXACT_CATEGORY_ID] = exact
}

/** The literal of categoryId in a text that JSON.parse accepted, read by a lossless parser. */
function categoryIdLiteral (text: string): string | undefined {
  let document: Record<string, unknown>
  try {
    document = parseLossless(text) as Record<string, unknown>
  } catch (error) {
    // JSON.parse accepted the text, so the lossless parser can only object to a repeated
    // key (which JSON.parse would silently resolve) or to nesting deeper than its stack.
    const repeated = /duplicate key '([^']*)'/i.exec((error as Error).message)
    throw ApiError.invalidRequest(repeated
      ? `the request body repeats the field ${JSON.stringify(repeated[1])}; send each field once`
      : 'the request body is nested too deeply')
  }
  const literal = document.categoryId
  return isLosslessNumber(literal) ? literal.value : undefined
}

export function registerJsonBodyParser (app: FastifyInstance): void {
  app.removeAllContentTypeParsers()
  app.addContentTypeParser('*', function readJsonBody (request, payload, done) {
    // Routes without a request body ignore whatever was sent, so that a bad body
    // never hides the 404 or 405 the client needs to see.
    if (request.routeOptions.schema?.body === undefined) {
      payload.resume()
      payload.once('end', () => done(null, undefined))
      payload.once('error', (error) => done(error, undefined))
      return
    }
    try {
      checkHeaders(request)
    } catch (error) {
      payload.resume()
      done(error as Error, undefined)
      return
    }
    const chunks: Buffer[] = []
    let received = 0
    let finished = false
    const finish = (error: Error | null, body?: unknown): void => {
      if (finished) return
      finished = true
      payload.removeAllListeners('data')
      done(error, body)
    }
    payload.on('data', (chunk: Buffer) => {
      received += chunk.length
      if (received > MAX_BODY_BYTES) {
        payload.pause()
        finish(payloadTooLarge())
        return
      }
      chunks.push(chunk)
    })
    payload.once('end', () => {
      try {
        finish(null, parseJsonBody(Buffer.concat(chunks, received)))
      } catch (error) {
        finish(error as Error)
      }
    })
    payload.once('error', (error) => finish(error))
  })
}
