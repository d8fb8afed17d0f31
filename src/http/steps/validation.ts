import type { IncomingHttpHeaders } from 'node:http'
import { AjvCompiler } from '@fastify/ajv-compiler'
import type { Ajv, ErrorObject, ValidateFunction } from 'ajv'
import { parse as parseContentType } from 'fast-content-type-parse'
import getRawBody from 'raw-body'
import { ApiError, errors } from '../../core/errors.js'
import type { ApiRoutes } from '../api-routes.js'
import { announcesBody, type Exchange } from '../exchange.js'
import { MAX_BODY_BYTES, parseJsonBody } from '../json-body.js'
import type { Operation } from '../operation.js'
import type { Step } from '../pipeline.js'
import { SHARED_SCHEMAS } from '../schemas/shared.js'
import { validationMessage, type SchemaViolation } from '../validation-message.js'

/** The parts of a request a schema validates, in the order they are checked (Fastify's order). */
const PARTS = ['params', 'body', 'querystring', 'headers'] as const
type Part = typeof PARTS[number]

/** Where each part's value is kept on the exchange. */
const VALUE_OF: Record<Part, (exchange: Exchange) => unknown> = {
  params: (exchange) => exchange.params,
  body: (exchange) => exchange.body,
  querystring: (exchange) => exchange.query,
  headers: (exchange) => exchange.headers
}

/**
 * The validator options: docs/decisions.md, no type coercion and no silently removed properties;
 * defaults filled in (limit's). `int64` is an integer format: the body parser already refused
 * anything beyond int64.
 */
function compileValidators (operations: readonly Operation[]): Map<Operation, Array<[Part, ValidateFunction]>> {
  const build = AjvCompiler()(Object.fromEntries(SHARED_SCHEMAS.map((schema) => [(schema as unknown as { $id: string }).$id, schema])), {
    customOptions: { coerceTypes: false, removeAdditional: false, useDefaults: true, allErrors: false, verbose: true },
    plugins: [(ajv: Ajv) => ajv.addFormat('int64', { type: 'number', validate: (value: number) => Number.isInteger(value) })]
  })
  return new Map(operations.map((operation) => {
    const { method, url } = operation
    const validators: Array<[Part, ValidateFunction]> = []
    for (const httpPart of PARTS) {
      const schema = operation.schema[httpPart]
      if (schema !== undefined) validators.push([httpPart, build({ schema: schema as object, method, url, httpPart }) as ValidateFunction])
    }
    return [operation, validators]
  }))
}

/** A body must arrive unencoded, as application/json in UTF-8: refused with 415 before a byte of it is read. */
function checkBodyHeaders (headers: IncomingHttpHeaders): void {
  const encoding = headers['content-encoding']
  if (encoding !== undefined && encoding.trim().toLowerCase() !== 'identity') {
    throw errors.encodedBody(encoding)
  }
  const contentType = headers['content-type']
  if (contentType === undefined) throw errors.notJson()
  let mediaType: { type: string, parameters: Record<string, string> }
  try {
    mediaType = parseContentType(contentType)
  } catch {
    throw errors.notJson()
  }
  if (mediaType.type !== 'application/json') throw errors.notJson(mediaType.type)
  const charset = mediaType.parameters.charset
  if (charset === undefined) return
  // The parser keeps the last of repeated parameters; a client that sends two means one of them.
  if (contentType.toLowerCase().split('charset').length > 2) throw errors.charsetRepeated()
  if (charset.toLowerCase() !== 'utf-8') throw errors.charsetNotUtf8()
}

/** What the body reader's failures mean to the client. */
function bodyError (error: getRawBody.RawBodyError): ApiError {
  switch (error.type) {
    case 'entity.too.large': return errors.bodyTooLarge()
    case 'request.size.invalid': return errors.contentLengthMismatch()
    default: return errors.bodyUnreadable()
  }
}

/**
 * The request's input, checked against its operation's schema (compiled once, with the validator
 * the framework uses, @fastify/ajv-compiler). An operation that takes a body has its headers
 * checked before a byte of it is read (415), then a client that sent `Expect: 100-continue` is
 * told to send it, and the body is read (raw-body: at most MAX_BODY_BYTES, 413 beyond, chunked or
 * not) and parsed without losing an int64 (json-body.ts). Then the operation's own checks of the
 * input as written (`prepare`), and the schema's. A violation is 400 naming the field.
 */
export function validation (routes: ApiRoutes): Step {
  const validators = compileValidators(routes.operations)

  function validate (exchange: Exchange): undefined {
    const operation = exchange.operation as Operation
    operation.prepare?.(exchange)
    for (const [part, validator] of validators.get(operation) ?? []) {
      if (validator(VALUE_OF[part](exchange) ?? null)) continue
      const [first] = validator.errors as ErrorObject[]
      throw ApiError.invalidRequest(first === undefined ? 'the request is invalid' : validationMessage(first as unknown as SchemaViolation, part))
    }
    return undefined
  }

  async function readBody (exchange: Exchange): Promise<undefined> {
    const request = exchange.request
    let bytes: Buffer
    try {
      bytes = await getRawBody(request, { length: request.headers['content-length'], limit: MAX_BODY_BYTES })
    } catch (error) {
      throw bodyError(error as getRawBody.RawBodyError)
    }
    exchange.body = parseJsonBody(bytes)
    return validate(exchange)
  }

  return {
    name: 'validation',
    scope: 'api',
    onRequest: function checkInput (exchange) {
      const operation = exchange.operation as Operation
      if (operation.schema.body === undefined) return validate(exchange)
      const headers = exchange.headers
      // No body at all: the schema says that one is required.
      if (headers['content-type'] === undefined && !announcesBody(headers)) return validate(exchange)
      checkBodyHeaders(headers)
      // Node's automatic 100 Continue is off (the server's checkContinue listener): it is sent only
      // to a request that got this far, authenticated and routed.
      if (headers.expect?.toLowerCase() === '100-continue') exchange.response.writeContinue()
      return readBody(exchange)
    }
  }
}
