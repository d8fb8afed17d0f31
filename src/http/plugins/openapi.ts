import Fastify, { type FastifySchema } from 'fastify'
import swagger from '@fastify/swagger'
import { CURSOR_TEXT } from '../../core/cursor.js'
import { IDEMPOTENCY_KEY_HEADER } from '../../core/idempotency.js'
import { INT64_MAX, INT64_MIN } from '../../core/int64.js'
import type { Operation } from '../operation.js'
import { SHARED_SCHEMAS } from '../schemas/shared.js'

export interface OpenApiOptions {
  publicBaseUrl: string | undefined
  stagingBaseUrl: string | undefined
}

const API_DESCRIPTION = `List, add and fetch the animals of a store.

**Getting a key.** Every operation requires an API key sent as \`Authorization: Bearer <API_KEY>\`. Sign up in the
[developer portal at /portal](/portal) and generate a key there (or ask an operator for one); it is shown once.

**Errors.** Every error has the body \`{code, message, status}\`: branch on \`code\`, show \`message\`. Besides the responses
listed per operation, any path under /v1 may answer 404 \`not_found\` (unknown path), 405 \`method_not_allowed\` with an
\`Allow\` header (known path, other method; \`OPTIONS\` answers 204 with \`Allow\`) and 500 \`internal_error\`.

**Retrying.** 503 \`service_unavailable\` (the service sheds load, shuts down, or cannot reach its database) and 429
\`rate_limited\` come with \`Retry-After\`. Rate limiting is off unless the operator sets RATE_LIMIT_PER_MINUTE; then every
answer to a request with a valid key carries the \`RateLimit\` and \`RateLimit-Policy\` fields of the IETF httpapi draft.
A create retried with the same \`Idempotency-Key\` never makes a second animal.

**Test mode (staging).** A test key (\`ask_test_…\`, chosen when the key is generated) calls the same base URL and paths
with the same contract, but reads and writes only its account's sandbox: data kept apart from the live catalogue both ways
(a live id is 404 with a test key, and the other way round), seeded with 20 demo animals and reset from the portal. A full
sandbox answers \`createPet\` with 403 \`sandbox_full\`. A separate staging deployment, when the operator runs one, is
listed among the servers.`

/** What JSON.stringify writes for the doubles nearest the int64 bounds: -2^63 exactly, and 2^63 for 2^63 − 1. */
const INT64_BOUND_LITERAL = /(?<=[:,[]\s*)(-?)9223372036854776000(?=\s*[,\]}])/g

/**
 * The document as JSON, with the int64 bounds digit for digit. A double cannot hold 2^63 − 1, so
 * the schemas carry the nearest one (see schemas/pet.ts), and JSON.stringify would print both
 * bounds as ±9223372036854776000.
 */
export function documentJson (document: unknown): string {
  return JSON.stringify(document).replace(INT64_BOUND_LITERAL, (_match, sign: string) => String(sign === '-' ? INT64_MIN : INT64_MAX))
}

/**
 * Bounds that a route checks in its own code, after the schema, so that a refusal names the
 * parameter in the route's own words: the document states them all the same.
 */
const CHECKED_BY_THE_ROUTE: Partial<Record<'querystring' | 'headers', Record<string, object>>> = {
  querystring: { cursor: CURSOR_TEXT },
  headers: { 'idempotency-key': IDEMPOTENCY_KEY_HEADER }
}

function withCheckedBounds (schema: FastifySchema | undefined): FastifySchema | undefined {
  if (schema === undefined) return schema
  const documented: Record<string, unknown> = { ...schema }
  for (const [part, bounds] of Object.entries(CHECKED_BY_THE_ROUTE)) {
    const object = documented[part] as { properties?: Record<string, object> } | undefined
    if (object?.properties === undefined) continue
    const properties = { ...object.properties }
    for (const [name, bound] of Object.entries(bounds)) {
      if (properties[name] !== undefined) properties[name] = { ...properties[name], ...bound }
    }
    documented[part] = { ...object, properties }
  }
  return documented as FastifySchema
}

type Headers = Record<string, unknown>
interface DocumentParts {
  paths?: Record<string, Record<string, { responses?: Record<string, { headers?: Headers }> }>>
  components?: { headers?: Headers }
}

/**
 * A header described the same way in several responses (the RateLimit fields, Retry-After, the
 * bearer challenge) becomes one component that each of those responses refers to.
 */
export function shareRepeatedHeaders<D> (document: D): D {
  const parts = document as DocumentParts
  const responses = Object.values(parts.paths ?? {}).flatMap((item) => Object.values(item)).flatMap((operation) => Object.values(operation.responses ?? {}))
  const seen = new Map<string, { text: string, count: number } | 'differs'>()
  for (const { headers = {} } of responses) {
    for (const [name, header] of Object.entries(headers)) {
      const text = JSON.stringify(header)
      const earlier = seen.get(name)
      if (earlier === undefined) seen.set(name, { text, count: 1 })
      else if (earlier !== 'differs' && earlier.text === text) earlier.count++
      else seen.set(name, 'differs')
    }
  }
  const shared = new Map([...seen].flatMap(([name, entry]) => entry !== 'differs' && entry.count > 1 ? [[name, JSON.parse(entry.text) as unknown]] : []))
  if (shared.size === 0) return document
  for (const response of responses) {
    for (const name of Object.keys(response.headers ?? {})) {
      if (shared.has(name) && response.headers !== undefined) response.headers[name] = { $ref: `#/components/headers/${name}` }
    }
  }
  parts.components = { ...parts.components, headers: Object.fromEntries(shared) }
  return document
}

/**
 * The OpenAPI 3.1 document of the API, built by @fastify/swagger from the very schemas that
 * validate the operations' requests. The framework's plugin builds a document from the routes it
 * is given: here it is given each operation of the API, on an instance of its own that is never
 * served (its routes answer nothing: the pipeline answers /v1), so the document is built once, at
 * start-up, and the framework that serves the portal has no route of the API.
 */
export async function describeApi (operations: readonly Operation[], options: OpenApiOptions): Promise<unknown> {
  const describer = Fastify()
  // Nothing is validated or serialised here: the schemas are only read.
  describer.setValidatorCompiler(() => () => true)
  describer.setSerializerCompiler(() => (data) => JSON.stringify(data))
  for (const schema of SHARED_SCHEMAS) describer.addSchema(schema)

  // x-internal: false says that both servers are meant for outside clients.
  const servers = [
    { url: options.publicBaseUrl ?? '/v1', description: 'Production', 'x-internal': false },
    ...(options.stagingBaseUrl === undefined ? [] : [{ url: options.stagingBaseUrl, description: 'Staging', 'x-internal': false }])
  ]
  const portal = options.publicBaseUrl === undefined ? undefined : new URL('/portal', options.publicBaseUrl).href

  await describer.register(swagger, {
    openapi: {
      openapi: '3.1.0',
      info: {
        title: 'Animal Store API',
        version: '1.0.0',
        description: API_DESCRIPTION,
        license: { name: 'MIT', identifier: 'MIT' },
        contact: { name: 'Animal Store developer portal', ...(portal !== undefined && { url: portal }) }
      },
      servers,
      tags: [
        { name: 'animals', description: 'The catalogue of animals.' },
        { name: 'store', description: 'Store orders (named by the specification, not described).' },
        { name: 'meta', description: 'About the API itself.' }
      ],
      security: [{ bearerAuth: [] }],
      components: {
        securitySchemes: {
          bearerAuth: { type: 'http', scheme: 'bearer', description: 'An API key: `Authorization: Bearer ask_…`. Get one in the [developer portal](/portal).' }
        }
      }
    },
    refResolver: {
      buildLocalReference: (json, _baseUri, _fragment, i) => (typeof json.$id === 'string' ? json.$id : `def-${i}`)
    },
    // Paths are relative to the servers, whose URLs already end in /v1, as in the specification.
    transform: ({ schema, url }) => ({ schema: withCheckedBounds(schema) as FastifySchema, url: url.replace(/^\/v1(?=\/)/, '') }),
    transformObject: (document) => 'openapiObject' in document ? shareRepeatedHeaders(document.openapiObject) : document.swaggerObject
  })
  for (const operation of operations) {
    describer.route({ method: operation.method, url: `/v1${operation.url}`, schema: operation.schema, handler: function describedOnly () {} })
  }
  await describer.ready()
  const document = describer.swagger()
  await describer.close()
  return document
}
