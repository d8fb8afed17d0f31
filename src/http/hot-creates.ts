import { IncomingMessage, type ServerResponse } from 'node:http'
import { performance } from 'node:perf_hooks'
import { PET_STATUSES, petToJson, type NewPetRecord, type PetStatus } from '../core/pets.js'
import type { VerifiedKey } from '../services/key-verifier.js'
import type { PetCatalog } from '../services/pet-catalog.js'
import type { FrontGate, HotPath, RequestHandler } from './front-gate.js'
import { createdHeaders, JSON_TYPE } from './headers.js'
import { EXACT_CATEGORY_ID, MAX_BODY_BYTES, parseJsonBody } from './plugins/json-body.js'
import { failureToApiError } from './plugins/errors.js'
import { commonHeaderList, requestIdOf } from './plugins/request-context.js'
import { NewPetSchema } from './schemas/pet.js'

const PLAIN_JSON_TYPES: ReadonlySet<string> = new Set(['application/json', JSON_TYPE])
const CONTENT_LENGTH = /^[1-9][0-9]{0,5}$/
const FIELDS: ReadonlySet<string> = new Set(Object.keys(NewPetSchema.properties))
const STATUSES: ReadonlySet<string> = new Set(PET_STATUSES)
const NAME: { pattern?: string, minLength?: number, maxLength?: number } = NewPetSchema.properties.name as object
// As Ajv reads a pattern: in Unicode mode, where a surrogate range matches only unpaired surrogates.
const NAME_PATTERN = new RegExp(NAME.pattern ?? '[^\\s\\S]', 'u')
const NAME_MIN = NAME.minLength ?? Infinity
const NAME_MAX = NAME.maxLength ?? 0

/** Lengths in code points, as JSON Schema counts them: never more than the UTF-16 units of `text.length`. */
function codePointsWithin (text: string, min: number, max: number): boolean {
  if (text.length < min) return false
  if (text.length <= max) return true
  let codePoints = 0
  for (let index = 0; index < text.length; index += (text.codePointAt(index) ?? 0) > 0xFFFF ? 2 : 1) {
    if (++codePoints > max) return false
  }
  return true
}

/**
 * The new animal when the parsed body is valid by NewPetSchema, whose limits are read from it;
 * undefined means "let the framework judge it". A categoryId beyond 2^53 comes exact from the
 * parser, as the route takes it.
 */
function validPet (value: unknown): NewPetRecord | undefined {
  if (typeof value !== 'object' || value === null || Array.isArray(value)) return undefined
  const body = value as Record<string | symbol, unknown>
  for (const field of Object.keys(body)) if (!FIELDS.has(field)) return undefined
  const { name, categoryId, status } = body
  if (typeof name !== 'string' || !codePointsWithin(name, NAME_MIN, NAME_MAX) || !NAME_PATTERN.test(name)) return undefined
  const exact = body[EXACT_CATEGORY_ID]
  if (typeof exact !== 'bigint' && !(typeof categoryId === 'number' && Number.isSafeInteger(categoryId))) return undefined
  if (status !== undefined && !(typeof status === 'string' && STATUSES.has(status))) return undefined
  return { name, categoryId: typeof exact === 'bigint' ? exact : categoryId as number, status: status as PetStatus | undefined }
}

/** A valid animal from the body's bytes, or undefined. */
function newPetOf (bytes: Buffer): NewPetRecord | undefined {
  try {
    return validPet(parseJsonBody(bytes))
  } catch {
    return undefined
  }
}

/** The request again, with the body already read, for the framework to read and judge as if it came first. */
function replayOf (request: IncomingMessage, body: Buffer): IncomingMessage {
  const replay = new IncomingMessage(request.socket)
  replay.method = request.method
  replay.url = request.url
  replay.httpVersion = request.httpVersion
  replay.httpVersionMajor = request.httpVersionMajor
  replay.httpVersionMinor = request.httpVersionMinor
  replay.headers = request.headers
  replay.rawHeaders = request.rawHeaders
  // The whole message is here: an incomplete one would be taken for an aborted request, and its socket closed.
  replay.complete = true
  replay.push(body)
  replay.push(null)
  return replay
}

export interface HotCreatesOptions {
  gate: FrontGate
  catalog: PetCatalog
}

/**
 * The hot create path, in front of the framework: answers createPet for a plain JSON body
 * (Content-Type application/json, a Content-Length within the limit, no encoding, no
 * Idempotency-Key) from an API key already verified, once the body, parsed by the same
 * strict parser as the framework's, is a valid NewPet. The animal is created through the same
 * catalogue (group commit, synced before the answer) and answered as the route does. Any
 * other request goes to Fastify; an invalid body goes to Fastify too, replayed, so every 400,
 * 413 and 415 comes from one place (one replayed while the server shuts down gets the 503
 * of a request that arrived too late). A failure of the store is answered here, through the
 * same mapping as the framework's error handler: the create must not run twice.
 * test/http/hot-creates.test.ts compares both paths.
 */
export class HotCreates implements HotPath {
  constructor (private readonly options: HotCreatesOptions) {}

  take (request: IncomingMessage, response: ServerResponse, framework: RequestHandler): boolean {
    const { gate } = this.options
    if (!gate.open || request.method !== 'POST' || request.url !== '/v1/pets') return false
    const headers = request.headers
    const declaredLength = headers['content-length']
    if (declaredLength === undefined || !CONTENT_LENGTH.test(declaredLength) || Number(declaredLength) > MAX_BODY_BYTES) return false
    if (!PLAIN_JSON_TYPES.has(headers['content-type'] ?? '')) return false
    if (headers['transfer-encoding'] !== undefined || headers['content-encoding'] !== undefined || headers['idempotency-key'] !== undefined) return false
    if (gate.isUnderPressure()) return false
    const key = gate.verifiedKeyOf(request)
    if (key === undefined) return false

    const started = performance.now()
    const chunks: Buffer[] = []
    let received = 0
    request.on('data', (chunk: Buffer) => {
      received += chunk.length
      chunks.push(chunk)
    })
    // A client that goes away before the end of its body gets no answer from either path.
    request.once('error', () => {})
    request.once('end', () => {
      const bytes = Buffer.concat(chunks, received)
      const pet = newPetOf(bytes)
      if (pet === undefined) {
        framework(replayOf(request, bytes), response)
        return
      }
      this.create(pet, key, request, response, started).catch((error: unknown) => {
        gate.log?.error({ err: error }, 'answering a create failed')
        response.destroy()
      })
    })
    return true
  }

  private async create (pet: NewPetRecord, key: VerifiedKey, request: IncomingMessage, response: ServerResponse, started: number): Promise<void> {
    const { gate, catalog } = this.options
    const requestId = requestIdOf(request)
    // As the framework's authentication does for every request it lets through.
    gate.verifier.used(key)
    if (gate.metrics) gate.metrics.inFlightRequests++
    let statusCode: number
    let headers: string[]
    let body: string
    try {
      const { id } = await catalog.create(pet)
      statusCode = 201
      body = petToJson({ id, ...pet })
      headers = createdHeaders(id)
    } catch (error) {
      const failure = failureToApiError(error, gate.log?.child({ requestId }), requestId)
      statusCode = failure.status
      body = JSON.stringify(failure.toBody())
      headers = ['content-type', JSON_TYPE, ...Object.entries(failure.headers).flat()]
    } finally {
      if (gate.metrics) gate.metrics.inFlightRequests--
    }
    response.writeHead(statusCode, [...headers, 'content-length', String(Buffer.byteLength(body)), ...commonHeaderList(requestId)]).end(body)
    gate.answered(request, '/v1/pets', statusCode, requestId, started)
    if (gate.metrics) gate.metrics.hotCreateAnswers++
  }
}
