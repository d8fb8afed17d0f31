import assert from 'node:assert/strict'
import type { FastifyInstance } from 'fastify'
import { Ajv2020, type ValidateFunction } from 'ajv/dist/2020.js'
import addFormats from 'ajv-formats'

export type Schema = Record<string, unknown>

export interface MediaType { schema?: Schema, example?: unknown, examples?: unknown }

export interface ResponseObject {
  description: string
  headers?: Record<string, { $ref?: string, description?: string, schema?: Schema }>
  content?: Record<string, MediaType>
}

export interface Parameter { name: string, in: string, required?: boolean, schema?: Schema, description?: string }

export interface Operation {
  operationId?: string
  tags?: string[]
  deprecated?: boolean
  security?: Array<Record<string, string[]>>
  parameters?: Parameter[]
  requestBody?: { required?: boolean, content: Record<string, MediaType> }
  responses: Record<string, ResponseObject>
  'x-stability'?: string
}

export interface OpenApiDocument {
  openapi: string
  info: { title: string, version: string, description?: string }
  servers?: Array<{ url: string, description?: string }>
  security?: Array<Record<string, string[]>>
  components: { securitySchemes?: Record<string, Schema>, schemas: Record<string, Schema>, responses?: Record<string, ResponseObject>, headers?: Record<string, { description?: string, schema?: Schema }> }
  paths: Record<string, Record<string, Operation>>
}

export const HTTP_METHODS = ['get', 'put', 'post', 'delete', 'options', 'head', 'patch', 'trace'] as const

/** The document as the running application serves it, at GET /v1/openapi.json (no key needed). */
export async function fetchOpenApiDocument (app: FastifyInstance): Promise<OpenApiDocument> {
  const response = await app.inject({ url: '/v1/openapi.json' })
  assert.equal(response.statusCode, 200, response.body)
  return response.json<OpenApiDocument>()
}

/** The operation of the document for a method and path template, if it documents one. */
export function operationOf (doc: OpenApiDocument, method: string, path: string): Operation | undefined {
  return doc.paths[path]?.[method.toLowerCase()]
}

/** Value at a local JSON pointer (`#/components/schemas/Pet`) of the document, or undefined. */
export function atPointer (doc: OpenApiDocument, ref: string): unknown {
  assert.ok(ref.startsWith('#/'), `not a local reference: ${ref}`)
  let node: unknown = doc
  for (const part of ref.slice(2).split('/').map((segment) => decodeURIComponent(segment).replace(/~1/g, '/').replace(/~0/g, '~'))) {
    if (typeof node !== 'object' || node === null) return undefined
    node = (node as Record<string, unknown>)[part]
  }
  return node
}

/** Follows `$ref`s until a schema that is not a bare reference. */
export function deref (doc: OpenApiDocument, schema: Schema | undefined): Schema {
  let current = schema
  for (let hops = 0; typeof current?.$ref === 'string' && hops < 10; hops++) current = atPointer(doc, current.$ref) as Schema | undefined
  assert.ok(current, `unresolvable schema ${JSON.stringify(schema)}`)
  return current
}

function pointerSegment (segment: string): string {
  return encodeURIComponent(segment.replace(/~/g, '~0').replace(/\//g, '~1'))
}

export interface DocumentValidator {
  /** A validator for the schema at that location of the document (`'paths', '/pets', 'get', ...`); undefined when nothing is there. */
  validatorAt: (...segments: string[]) => ValidateFunction | undefined
  errorsText: (validate: ValidateFunction) => string
}

/** Ajv (JSON Schema 2020-12, the dialect of OpenAPI 3.1) holding the whole document, so `#/components/...` refs resolve. */
export function documentValidator (doc: OpenApiDocument): DocumentValidator {
  const ajv = new Ajv2020({ strict: false, allErrors: true })
  addFormats.default(ajv)
  ajv.addFormat('int64', { type: 'number', validate: Number.isInteger })
  ajv.addSchema({ ...doc, $id: 'openapi.json' })
  const compiled = new Map<string, ValidateFunction | undefined>()
  return {
    validatorAt (...segments) {
      const ref = `openapi.json#/${segments.map(pointerSegment).join('/')}`
      if (compiled.has(ref)) return compiled.get(ref)
      const target = atPointer(doc, `#/${segments.map(pointerSegment).join('/')}`)
      const validate = target === undefined ? undefined : ajv.compile({ $ref: ref })
      compiled.set(ref, validate)
      return validate
    },
    errorsText: (validate) => ajv.errorsText(validate.errors)
  }
}
