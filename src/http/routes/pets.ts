import { Type } from 'typebox'
import { ApiError, errors } from '../../core/errors.js'
import { parsePositiveInt64Number } from '../../core/int64.js'
import { figure, MAX_BODY_BYTES, PAGE_SIZE } from '../../core/limits.js'
import { MAX_PET_ID, petToJson } from '../../core/pets.js'
import { IDEMPOTENCY_KEY_TTL_MS, parseIdempotencyKey } from '../../core/idempotency.js'
import { spanText } from '../../core/span-text.js'
import type { Scope } from '../../core/api-keys.js'
import type { IdempotencyKeys } from '../../services/idempotency-keys.js'
import type { PetCatalog } from '../../services/pet-catalog.js'
import type { SandboxCatalog } from '../../services/sandbox-catalog.js'
import type { Answer, Exchange } from '../exchange.js'
import { createdHeaders, deprecationHeaders } from '../headers.js'
import { EXACT_CATEGORY_ID } from '../json-body.js'
import type { Operation } from '../operation.js'
import type { ListPetsRequest, PetReads } from '../pet-reads.js'
import { errorResponses, example, keyedResponses, withHeaders, type ErrorExamples } from '../schemas/error.js'
import { DEPRECATION_HEADERS, ETAG_HEADER, LOCATION_HEADER, NEXT_LINK_HEADER } from '../schemas/headers.js'
import { requiredScopeOf, requiresScope } from '../schemas/scopes.js'
import { IdempotencyKeyHeaderSchema, ListPetsQuerySchema, PetIdParamsSchema, type ListPetsQuery, type NewPet } from '../schemas/pet.js'

export interface PetOperationsOptions {
  catalog: PetCatalog
  reads: PetReads
  idempotencyKeys: IdempotencyKeys
  /** Where test keys read and write (test mode). */
  sandbox: SandboxCatalog
}

const LIMIT_TEXT = /^[1-9][0-9]*$/

const PetRef = Type.Ref('Pet')
const PetsRef = Type.Ref('Pets')
const NewPetRef = Type.Ref('NewPet')

/** The query as fast-querystring parses it: a repeated parameter is an array. */
type RawQuery = Record<string, string | string[] | undefined>

/** A query parameter given at most once, as written; refused with 400 when repeated. */
function single (raw: RawQuery, name: string): string | undefined {
  const value = raw[name]
  if (Array.isArray(value)) throw ApiError.invalidRequest(`query parameter ${name} must be given at most once`)
  return value
}

/**
 * docs/decisions.md: query parameters are checked as written, each at most once, before
 * the schema checks their range: a coercing validator would accept " 20", "1e1" or "0x14".
 */
function readListQuery (exchange: Exchange): void {
  const raw = exchange.query as RawQuery
  const limit = single(raw, 'limit')
  const status = single(raw, 'status')
  const cursor = single(raw, 'cursor')
  if (limit !== undefined && !LIMIT_TEXT.test(limit)) throw errors.limitOutOfRange()
  if (cursor === '') throw ApiError.invalidRequest('query parameter cursor must not be empty')
  const query: ListPetsQuery = {}
  if (limit !== undefined) query.limit = Number(limit)
  if (status !== undefined) query.status = status as ListPetsQuery['status']
  if (cursor !== undefined) query.cursor = cursor
  exchange.query = query
}

function readPetId (exchange: Exchange): void {
  const text = (exchange.params as { petId: string }).petId
  const petId = parsePositiveInt64Number(text)
  if (petId === undefined) throw errors.invalidPetId()
  // The contract takes any int64 here; one beyond the ids assigned names no animal: 404, not the schema's 400.
  if (petId > MAX_PET_ID) throw errors.noSuchPet(text)
  exchange.params = { petId }
}

/** What the server answers to each kind of invalid request, as the document shows it. */
const LIST_PETS_400: ErrorExamples = {
  limit: example('limit out of range', errors.limitOutOfRange()),
  status: { summary: 'An unknown status', code: 'invalid_request', message: 'query parameter status must be one of available, pending, sold' },
  cursor: example('A cursor this server did not issue', errors.invalidCursor())
}
const CREATE_PET_400: ErrorExamples = {
  missingField: { summary: 'A required field is missing', code: 'invalid_request', message: 'name is required' },
  categoryId: example('categoryId outside int64', errors.categoryIdOutOfRange()),
  unknownField: { summary: 'A field NewPet does not have', code: 'invalid_request', message: 'unknown field "id": the allowed fields are name, categoryId, status' },
  idempotencyKey: example('An invalid Idempotency-Key', errors.invalidIdempotencyKey())
}
const CREATE_PET_403 = {
  description: 'With a test key, `sandbox_full`: its account\'s sandbox holds SANDBOX_MAX_PETS animals (test mode); reset it to create more.',
  examples: { sandboxFull: example('A test key\'s sandbox is full (test mode)', errors.sandboxFull(10_000)) } satisfies ErrorExamples
}
const GET_PET_400: ErrorExamples = {
  petId: example('petId is not a positive int64', errors.invalidPetId())
}
const GET_PET_404: ErrorExamples = {
  unknown: example('No animal has this id', errors.noSuchPet(999999))
}

const LIST_PETS_SCHEMA = requiresScope('animals:read', {
  operationId: 'listPets',
  summary: 'List animals',
  description: 'Animals ordered by id ascending, at most `limit` of them. When more match, the response carries a `Link: <…>; rel="next"` header (RFC 8288) whose URL returns the next page; following it visits every matching animal exactly once, even while animals are added. A page that came back full never changes and carries a strong ETag.',
  tags: ['animals'],
  querystring: ListPetsQuerySchema,
  response: keyedResponses({
    200: {
      ...PetsRef,
      description: 'A page of animals.',
      headers: { Link: NEXT_LINK_HEADER, ETag: ETAG_HEADER }
    },
    304: { description: 'Not modified: the full page matching If-None-Match is unchanged; no body.', type: 'null' },
    ...errorResponses([400, 401], { 400: LIST_PETS_400 })
  })
})

const CREATE_PET_SCHEMA = requiresScope('animals:write', {
  operationId: 'createPet',
  summary: 'Add an animal',
  description: 'The body must be a JSON object with exactly the fields of NewPet, sent as `Content-Type: application/json` of at most ' + figure(MAX_BODY_BYTES) + ' bytes. No type coercion: `"5"` is not an integer.\n\n' +
    `Addition to the specification: with an \`Idempotency-Key\` header (IETF httpapi draft), a retry with the same key and the same animal returns the first response (status, body, \`Location\`) without creating a second animal, on any instance. The same key with another animal gets 422; while the first request with a key is still in flight, another gets 409. Keys belong to the API key that sent them and are kept ${spanText(IDEMPOTENCY_KEY_TTL_MS)}.`,
  tags: ['animals'],
  headers: Type.Object({ 'idempotency-key': Type.Optional(IdempotencyKeyHeaderSchema) }),
  body: NewPetRef,
  response: keyedResponses({
    201: {
      ...PetRef,
      description: 'The created animal (or, for a repeated Idempotency-Key, the animal the first request created).',
      headers: { Location: LOCATION_HEADER }
    },
    ...errorResponses([400, 401, 409, 413, 415, 422, 507], { 400: CREATE_PET_400 })
  })
}, CREATE_PET_403)

const GET_PET_SCHEMA = requiresScope('animals:read', {
  operationId: 'getPet',
  summary: 'Get an animal (deprecated)',
  description: 'Deprecated: to be removed on 5 December 2030. Use `GET /pets` with the `status` filter instead. Every response carries `Deprecation`, `Sunset` and `Link: </v1/pets>; rel="successor-version"`.',
  deprecated: true,
  tags: ['animals'],
  params: PetIdParamsSchema,
  response: withHeaders(keyedResponses({
    200: { ...PetRef, description: 'The animal.' },
    ...errorResponses([400, 401, 404], { 400: GET_PET_400, 404: GET_PET_404 })
  }), DEPRECATION_HEADERS)
})

/**
 * The schemas of the operations below, each stating on its route the scope it needs
 * (`x-required-scopes`): what the CLI's help and the portal say of the scopes is read from them.
 */
export const PET_OPERATION_SCHEMAS = [LIST_PETS_SCHEMA, CREATE_PET_SCHEMA, GET_PET_SCHEMA] as const

/** The operations a key with the scope may call, in the order of the API document. */
export function operationsAllowedBy (scope: Scope): string[] {
  return PET_OPERATION_SCHEMAS.filter((schema) => requiredScopeOf(schema) === scope).map((schema) => schema.operationId)
}

function readIdempotencyKey (exchange: Exchange): string | undefined {
  const header = exchange.headers['idempotency-key']
  if (header === undefined) return undefined
  const key = typeof header === 'string' ? parseIdempotencyKey(header) : undefined
  if (key === undefined) throw errors.invalidIdempotencyKey()
  return key
}

/** listPets, createPet and getPet. */
export function petOperations ({ catalog, reads, idempotencyKeys, sandbox }: PetOperationsOptions): Operation[] {
  return [listPetsOperation(reads, sandbox), createPetOperation(catalog, idempotencyKeys, sandbox), getPetOperation(reads, sandbox)]
}

/**
 * The mode is the key's (docs/decisions.md, test mode): one branch on the key authentication verified, so
 * that a live request pays a property read and nothing more.
 */
function readsOf (exchange: Exchange, reads: PetReads, sandbox: SandboxCatalog): PetReads {
  const key = exchange.key
  return key !== null && key.test ? sandbox.readsFor(key.accountId) : reads
}

function created (id: number, body: string): Answer {
  return { statusCode: 201, headers: [...createdHeaders(id), 'content-length', String(Buffer.byteLength(body))], body }
}

function listPetsOperation (live: PetReads, sandbox: SandboxCatalog): Operation {
  return {
    operationId: 'listPets',
    method: 'GET',
    url: '/pets',
    prepare: readListQuery,
    schema: LIST_PETS_SCHEMA,
    handle: function listPets (exchange) {
      const { limit = PAGE_SIZE.default, status, cursor } = exchange.query as ListPetsQuery
      const wanted: ListPetsRequest = { limit, status, cursor, ifNoneMatch: exchange.headers['if-none-match'] }
      const reads = readsOf(exchange, live, sandbox)
      // A cached page is answered in this turn of the event loop, without a promise.
      return reads.cachedListPets(wanted) ?? reads.listPets(wanted)
    }
  }
}

function createPetOperation (catalog: PetCatalog, idempotencyKeys: IdempotencyKeys, sandbox: SandboxCatalog): Operation {
  return {
    operationId: 'createPet',
    method: 'POST',
    url: '/pets',
    schema: CREATE_PET_SCHEMA,
    handle: async function createPet (exchange) {
      const body = exchange.body as NewPet & { [EXACT_CATEGORY_ID]?: bigint }
      const pet = { name: body.name, categoryId: body[EXACT_CATEGORY_ID] ?? body.categoryId, status: body.status }
      const key = readIdempotencyKey(exchange)
      const claim = key === undefined || exchange.key === null ? undefined : { apiKeyId: exchange.key.keyId, key }
      const testAccount = exchange.key !== null && exchange.key.test ? exchange.key.accountId : undefined

      if (claim !== undefined) {
        const earlier = await idempotencyKeys.claim(claim, pet)
        if (earlier.outcome === 'mismatch') throw errors.idempotencyKeyReused()
        if (earlier.outcome === 'in_flight') throw errors.idempotencyKeyInUse()
        if (earlier.outcome === 'completed') {
          const body = await (testAccount === undefined ? catalog.findById(earlier.petId) : sandbox.findById(testAccount, earlier.petId))
          if (body === undefined) throw new Error(`idempotency key refers to missing animal ${earlier.petId}`)
          return created(earlier.petId, body)
        }
      }
      try {
        const { id } = await (testAccount === undefined ? catalog.create(pet, claim) : sandbox.create(testAccount, pet, claim))
        return created(id, petToJson({ id, ...pet }))
      } catch (error) {
        if (claim !== undefined) await idempotencyKeys.release(claim).catch(() => {})
        throw error
      }
    }
  }
}

function getPetOperation (live: PetReads, sandbox: SandboxCatalog): Operation {
  return {
    operationId: 'getPet',
    method: 'GET',
    url: '/pets/:petId',
    fields: Object.entries(deprecationHeaders()).flat(),
    prepare: readPetId,
    schema: GET_PET_SCHEMA,
    handle: function getPet (exchange) {
      const { petId } = exchange.params as { petId: number }
      const reads = readsOf(exchange, live, sandbox)
      const cached = reads.cachedPet(petId)
      if (cached !== undefined) return cached
      return reads.getPet(petId).then((answer) => {
        if (answer === undefined) throw errors.noSuchPet(petId)
        return answer
      })
    }
  }
}
