import { isInteger, isSafeNumber, parse as parseLossless, stringify as stringifyLossless } from 'lossless-json'
import createClient, { type Client } from 'openapi-fetch'
import type { components, operations, paths } from './schema.js'

export type { components, operations, paths } from './schema.js'

/**
 * An int64 the API keeps exactly: a number while it is a safe integer (up to 2^53 − 1 either way), a
 * bigint beyond, where a number would be rounded. Send either; a bigint is written digit for digit.
 */
export type Int64 = number | bigint
export type Pet = Omit<components['schemas']['Pet'], 'categoryId'> & { categoryId: Int64 }
export type NewPet = Omit<components['schemas']['NewPet'], 'categoryId'> & { categoryId: Int64 }
export type PetStatus = components['schemas']['PetStatus']
/** The body of every error response of the API. */
export type ErrorBody = components['schemas']['Error']
export type ErrorCode = ErrorBody['code']
/** Query of listPets; `cursor` comes from a previous page's `next`. */
export type ListPetsQuery = NonNullable<operations['listPets']['parameters']['query']>

/**
 * Code of an AnimalStoreError raised for a non-2xx response whose body is not the API's
 * Error object (a proxy's HTML error page, an empty 502).
 */
export const UNEXPECTED_RESPONSE = 'unexpected_response'

export interface AnimalStoreClientOptions {
  /** Base URL of the API, ending in /v1: `https://api.example.com/v1`. */
  baseUrl: string
  /** An API key (`ask_…`), sent as `Authorization: Bearer <apiKey>` and only ever to baseUrl. */
  apiKey: string
  /** Replaces globalThis.fetch, for instance to add a proxy, a timeout or logging. */
  fetch?: (request: Request) => Promise<Response>
}

export interface PetPage {
  pets: Pet[]
  /** The query of the next page, read from `Link: <…>; rel="next"`; undefined on the last page. */
  next: ListPetsQuery | undefined
}

export interface CreatePetOptions {
  /** Sent as `Idempotency-Key`: a retry with the same key and animal returns the first animal instead of a second one. */
  idempotencyKey?: string
}

/** The deprecation signal of an operation: RFC 9745 `Deprecation`, RFC 8594 `Sunset`, `Link: rel="successor-version"`. */
export interface Deprecation {
  deprecatedAt: Date
  sunset: Date
  /** Absolute URL of the replacement. */
  successor: string
}

export interface GetPetResult {
  pet: Pet
  /** Present while the server announces getPet's deprecation (on every response until the sunset). */
  deprecation: Deprecation | undefined
}

export interface AnimalStoreClient {
  /** One page of animals, ordered by id. Pass `page.next` to get the following page. */
  listPets (query?: ListPetsQuery): Promise<PetPage>
  /** Every matching animal, in id order, requesting page after page by following `next` links. */
  allPets (query?: Pick<ListPetsQuery, 'status' | 'limit'>): AsyncGenerator<Pet, void, undefined>
  createPet (pet: NewPet, options?: CreatePetOptions): Promise<Pet>
  /**
   * One animal, with the deprecation signal the API sends with it.
   * @deprecated The API deprecated getPet (sunset 2030-12-05); its successor is listPets with a status filter.
   */
  getPet (petId: number): Promise<GetPetResult>
  /** The underlying openapi-fetch client, typed from the document, for anything the methods above do not cover. */
  readonly raw: Client<paths>
}

/** Every non-2xx response becomes this error, its fields taken from the API's Error body. */
export class AnimalStoreError extends Error {
  override readonly name = 'AnimalStoreError'
  readonly code: ErrorCode | typeof UNEXPECTED_RESPONSE
  /** The HTTP status of the response. */
  readonly status: number
  /** The response's `X-Request-Id`: quote it when reporting a problem. */
  readonly requestId: string | undefined

  constructor (fields: { code: ErrorCode | typeof UNEXPECTED_RESPONSE, message: string, status: number, requestId: string | undefined }) {
    super(fields.message)
    this.code = fields.code
    this.status = fields.status
    this.requestId = fields.requestId
  }
}

export function createAnimalStoreClient (options: AnimalStoreClientOptions): AnimalStoreClient {
  // Without this, a missing key travels as `Bearer undefined` and comes back as "the API key is invalid".
  if (typeof options.apiKey !== 'string' || options.apiKey.trim() === '') {
    throw new TypeError(`createAnimalStoreClient needs an apiKey (ask_…), got ${options.apiKey === '' ? 'an empty string' : String(options.apiKey)}: create one in the developer portal or with animal-store keys create`)
  }
  const baseUrl = options.baseUrl.replace(/\/+$/, '')
  const raw = createClient<paths>({
    baseUrl,
    headers: { authorization: `Bearer ${options.apiKey}` },
    ...(options.fetch !== undefined && { fetch: options.fetch })
  })

  async function listPets (query: ListPetsQuery = {}): Promise<PetPage> {
    const { data, error, response } = await raw.GET('/pets', { params: { query }, parseAs: 'text' })
    if (data === undefined) throw errorOf(response, error)
    return { pets: parseJson(data) as Pet[], next: nextPageQuery(response.headers.get('link')) }
  }

  async function * allPets (query: Pick<ListPetsQuery, 'status' | 'limit'> = {}): AsyncGenerator<Pet, void, undefined> {
    let next: ListPetsQuery | undefined = query
    while (next !== undefined) {
      const page: PetPage = await listPets(next)
      yield * page.pets
      next = page.next
    }
  }

  async function createPet (pet: NewPet, { idempotencyKey }: CreatePetOptions = {}): Promise<Pet> {
    const { data, error, response } = await raw.POST('/pets', {
      // The document types categoryId as a number; a bigint is written as its digits all the same.
      body: pet as components['schemas']['NewPet'],
      bodySerializer: (body) => stringifyLossless(body) ?? '',
      params: idempotencyKey === undefined ? {} : { header: { 'idempotency-key': idempotencyKey } },
      parseAs: 'text'
    })
    if (data === undefined) throw errorOf(response, error)
    return parseJson(data) as Pet
  }

  async function getPet (petId: number): Promise<GetPetResult> {
    const { data, error, response } = await raw.GET('/pets/{petId}', { params: { path: { petId } }, parseAs: 'text' })
    if (data === undefined) throw errorOf(response, error)
    return { pet: parseJson(data) as Pet, deprecation: deprecationOf(response.headers, response.url === '' ? `${baseUrl}/` : response.url) }
  }

  return { listPets, allPets, createPet, getPet, raw }
}

/**
 * JSON as the API writes it, without rounding: an integer beyond 2^53 becomes a bigint, every
 * other number what JSON.parse makes of it. (JSON.parse would turn 9007199254740993 into
 * 9007199254740992.)
 */
export function parseJson (text: string): unknown {
  return parseLossless(text, undefined, (digits) => isInteger(digits) && !isSafeNumber(digits) ? BigInt(digits) : Number(digits))
}

function errorOf (response: Response, text: unknown): AnimalStoreError {
  let body: unknown
  try {
    body = typeof text === 'string' ? parseJson(text) : text
  } catch {
    body = undefined
  }
  const requestId = response.headers.get('x-request-id') ?? undefined
  if (isErrorBody(body)) return new AnimalStoreError({ code: body.code, message: body.message, status: response.status, requestId })
  return new AnimalStoreError({
    code: UNEXPECTED_RESPONSE,
    message: `the API answered ${response.status} without an Error body`,
    status: response.status,
    requestId
  })
}

function isErrorBody (body: unknown): body is ErrorBody {
  if (typeof body !== 'object' || body === null) return false
  const { code, message, status } = body as Record<string, unknown>
  return typeof code === 'string' && typeof message === 'string' && typeof status === 'number'
}

/**
 * The query of the `next` link. Only its query is used, against baseUrl: the API key is
 * never sent to a host that a response names, and every parameter the server put in the
 * link (limit, status, cursor) goes back unchanged.
 */
function nextPageQuery (linkHeader: string | null): ListPetsQuery | undefined {
  const target = linkTarget(linkHeader, 'next')
  if (target === undefined) return undefined
  const query: Record<string, string | number> = {}
  for (const [name, value] of new URL(target, 'http://next.invalid').searchParams) {
    query[name] = name === 'limit' ? Number(value) : value
  }
  return query as ListPetsQuery
}

function deprecationOf (headers: Headers, responseUrl: string): Deprecation | undefined {
  const deprecatedAt = /^@(-?\d+)$/.exec(headers.get('deprecation')?.trim() ?? '')
  const sunset = Date.parse(headers.get('sunset') ?? '')
  const successor = linkTarget(headers.get('link'), 'successor-version')
  if (deprecatedAt?.[1] === undefined || Number.isNaN(sunset) || successor === undefined) return undefined
  return {
    deprecatedAt: new Date(Number(deprecatedAt[1]) * 1000),
    sunset: new Date(sunset),
    successor: URL.canParse(successor, responseUrl) ? new URL(successor, responseUrl).href : successor
  }
}

/** The target of the first RFC 8288 link with the given relation type. */
function linkTarget (header: string | null, rel: string): string | undefined {
  if (header === null) return undefined
  for (const [, target, params] of header.matchAll(/<([^>]*)>([^<]*)/g)) {
    const relation = /;\s*rel\s*=\s*(?:"([^"]*)"|([^\s;,]+))/i.exec(params ?? '')
    const types = (relation?.[1] ?? relation?.[2] ?? '').toLowerCase().split(/\s+/)
    if (types.includes(rel)) return target
  }
  return undefined
}
