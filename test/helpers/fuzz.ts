import { test, type TestContext } from 'node:test'
import assert from 'node:assert/strict'
import fc from 'fast-check'
import type { InjectOptions } from 'fastify'
import { generateApiKey } from '../../src/core/api-keys.js'
import { buildTestApp, TEST_ENGINE, type Scope, type TestApp } from './build-app.js'
import { deref, documentValidator, fetchOpenApiDocument, type DocumentValidator, type OpenApiDocument, type Schema } from './openapi-validator.js'

/*
 * Fuzzing from the contract. Every request is generated from the OpenAPI document the
 * application serves (paths, methods, the NewPet schema, the listPets parameters) or is
 * a mutation of such a request, and every answer is checked against the document and
 * docs/decisions.md: no 5xx; a status the document lists for the operation (404/405/204 for
 * unknown paths, other methods and OPTIONS; 401 first when the key is missing or bad);
 * application/json with a body matching the documented schema; the exact 4xx the
 * contract gives for the invalid requests; created animals that read back exactly as
 * sent; nothing created by a refused request; Object.prototype untouched.
 *
 * FUZZ_RUNS sets how many requests are generated in all, split across the properties
 * below (default 2,000; 1,000 with TEST_ENGINE=postgres; npm run reliability sends 50,000);
 * FUZZ_SEED replays a run: every property derives its fast-check seed from it. The seed is
 * printed first thing, and changes from run to run, so every run tries other requests.
 */

// ---------------------------------------------------------------------------------------
// Configuration

/**
 * npm test samples: a new seed every run, npm run reliability for the long run. PostgreSQL commits
 * every created animal durably, so its run is shorter.
 */
export const DEFAULT_TOTAL_RUNS = TEST_ENGINE === 'postgres' ? 1_000 : 2_000

export function integerFromEnv (name: string): number | undefined {
  const text = process.env[name]
  if (text === undefined || text.trim() === '') return undefined
  const value = Number(text)
  assert.ok(Number.isSafeInteger(value), `${name} must be an integer, got ${JSON.stringify(text)}`)
  return value
}

export const TOTAL_RUNS = integerFromEnv('FUZZ_RUNS') ?? DEFAULT_TOTAL_RUNS
export const SEED = integerFromEnv('FUZZ_SEED') ?? (Date.now() % 2_147_483_647)
export const REPLAY = `replay with FUZZ_SEED=${SEED}${process.env.FUZZ_RUNS ? ` FUZZ_RUNS=${TOTAL_RUNS}` : ''}${TEST_ENGINE === 'postgres' ? ' TEST_ENGINE=postgres' : ''}`

/** Share of TOTAL_RUNS each property generates. */
export const SHARES = { createPet: 0.32, contentType: 0.1, listPets: 0.2, getPet: 0.14, routing: 0.24 } as const

export function runsOf (property: keyof typeof SHARES): number {
  return Math.max(20, Math.round(TOTAL_RUNS * SHARES[property]))
}

export function seedOf (property: keyof typeof SHARES): number {
  return (SEED + Object.keys(SHARES).indexOf(property)) | 0
}

console.log(`fuzz: seed ${SEED}, ${TOTAL_RUNS} generated requests on ${TEST_ENGINE} (${REPLAY})`)

export const INT64_MIN = -(2n ** 63n)
export const INT64_MAX = 2n ** 63n - 1n
export const MAX_SAFE = BigInt(Number.MAX_SAFE_INTEGER)
export const MAX_BODY_BYTES = 65_536
export const MAX_PARAM_LENGTH = 100
export const JSON_TYPE = /^application\/json(;|$)/
export const CODE_BY_STATUS: Record<number, string> = {
  400: 'invalid_request',
  401: 'unauthorized',
  404: 'not_found',
  405: 'method_not_allowed',
  413: 'payload_too_large',
  415: 'unsupported_media_type',
  501: 'not_implemented'
}
export const DEPRECATION = { deprecation: /^@\d+$/, sunset: /^Thu, 05 Dec 2030 00:00:00 GMT$/, link: /<\/v1\/pets>; rel="successor-version"/ }

// ---------------------------------------------------------------------------------------
// Object.prototype (and friends) must come out of the run as they went in.

/** Keys the generated pollution payloads try to plant. */
export const POLLUTION_KEYS = ['polluted', 'isAdmin', 'injected', 'status', 'name']

export type PrototypeSnapshot = Array<[string, Array<[string | symbol, unknown]>]>

export function snapshotPrototypes (): PrototypeSnapshot {
  const prototypes: Array<[string, object]> = [['Object', Object.prototype], ['Array', Array.prototype], ['Function', Function.prototype], ['String', String.prototype]]
  return prototypes.map(([name, prototype]) => [name, Reflect.ownKeys(prototype).map((key) => {
    const descriptor = Object.getOwnPropertyDescriptor(prototype, key)
    return [key, descriptor?.value ?? descriptor?.get]
  })])
}

export const PROTOTYPES = snapshotPrototypes()

export function assertPrototypesUnchanged (context: string): void {
  const now = snapshotPrototypes()
  for (const [index, [name, entries]] of PROTOTYPES.entries()) {
    const current = now[index]?.[1] ?? []
    assert.deepEqual(current.map(([key]) => String(key)), entries.map(([key]) => String(key)), `${name}.prototype gained or lost properties after:\n${context}`)
    for (const [position, [key, value]] of entries.entries()) {
      assert.ok(current[position]?.[1] === value, `${name}.prototype.${String(key)} was replaced after:\n${context}`)
    }
  }
  for (const key of POLLUTION_KEYS) {
    assert.equal(({} as Record<string, unknown>)[key], undefined, `({}).${key} is defined after:\n${context}`)
  }
}

// ---------------------------------------------------------------------------------------
// JSON texts as trees that keep what JSON.parse loses: key order, repeated keys, number literals.

export type JValue =
  | { k: 'obj', entries: Array<[string, JValue]> }
  | { k: 'arr', items: JValue[] }
  | { k: 'str', v: string }
  | { k: 'num', text: string }
  | { k: 'lit', text: 'true' | 'false' | 'null' }
export type JObject = Extract<JValue, { k: 'obj' }>

/** compact; with spaces; non-ASCII as \\u escapes; every character of every key as a \\u escape (`"\\u005f\\u005fproto..."`). */
export type Style = 'compact' | 'spaced' | 'escaped' | 'keys-escaped'

export function serialize (value: JValue, style: Style = 'compact'): string {
  const space = style === 'spaced' ? ' ' : ''
  const string = (text: string): string => {
    const json = JSON.stringify(text)
    return style === 'escaped' ? json.replace(/[^\x20-\x7e]/g, (unit) => `\\u${unit.charCodeAt(0).toString(16).padStart(4, '0')}`) : json
  }
  switch (value.k) {
    case 'obj': return `{${space}${value.entries.map(([key, item]) => `${style === 'keys-escaped' ? escapeAll(key) : string(key)}:${space}${serialize(item, style)}`).join(`,${space}`)}${space}}`
    case 'arr': return `[${value.items.map((item) => serialize(item, style)).join(`,${space}`)}]`
    case 'str': return string(value.v)
    case 'num': return value.text
    case 'lit': return value.text
  }
}

export function escapeAll (text: string): string {
  let out = ''
  for (let index = 0; index < text.length; index++) out += `\\u${text.charCodeAt(index).toString(16).padStart(4, '0')}`
  return `"${out}"`
}

/** Parses a text that JSON.parse accepted into a tree (no error handling needed). */
export function parseTree (text: string): JValue {
  let at = 0
  const skip = (): void => { while (at < text.length && ' \t\n\r'.includes(text[at] ?? '')) at++ }
  const readString = (): string => {
    const start = at
    at++
    while (text[at] !== '"') at += text[at] === '\\' ? 2 : 1
    at++
    return JSON.parse(text.slice(start, at)) as string
  }
  const readValue = (): JValue => {
    skip()
    const char = text[at]
    if (char === '{') {
      at++
      const entries: Array<[string, JValue]> = []
      skip()
      if (text[at] === '}') { at++; return { k: 'obj', entries } }
      for (;;) {
        skip()
        const key = readString()
        skip()
        at++ // :
        entries.push([key, readValue()])
        skip()
        if (text[at++] === '}') return { k: 'obj', entries }
      }
    }
    if (char === '[') {
      at++
      const items: JValue[] = []
      skip()
      if (text[at] === ']') { at++; return { k: 'arr', items } }
      for (;;) {
        items.push(readValue())
        skip()
        if (text[at++] === ']') return { k: 'arr', items }
      }
    }
    if (char === '"') return { k: 'str', v: readString() }
    for (const literal of ['true', 'false', 'null'] as const) {
      if (text.startsWith(literal, at)) { at += literal.length; return { k: 'lit', text: literal } }
    }
    const number = /-?(?:0|[1-9]\d*)(?:\.\d+)?(?:[eE][+-]?\d+)?/y
    number.lastIndex = at
    const match = number.exec(text)
    assert.ok(match, `parseTree: no value at ${at}`)
    at += match[0].length
    return { k: 'num', text: match[0] }
  }
  return readValue()
}

/** The exact value of a JSON number literal: an integer, a non-integer, or an integer far outside int64. */
export function exactInteger (literal: string): bigint | 'fraction' | 'huge' {
  const match = /^(-?)(\d+)(?:\.(\d+))?(?:[eE]([+-]?\d+))?$/.exec(literal)
  assert.ok(match, `not a JSON number: ${literal}`)
  const fraction = match[3] ?? ''
  let digits = ((match[2] ?? '') + fraction).replace(/^0+/, '')
  let exponent = Number(match[4] ?? '0') - fraction.length
  if (digits === '') return 0n
  const significant = digits.replace(/0+$/, '')
  exponent += digits.length - significant.length
  digits = significant
  if (exponent < 0) return 'fraction'
  if (digits.length + exponent > 30) return 'huge'
  return (match[1] === '-' ? -1n : 1n) * BigInt(digits) * 10n ** BigInt(exponent)
}

export const PLAIN_INTEGER = /^-?(0|[1-9]\d*)$/

// ---------------------------------------------------------------------------------------
// What the contract says about a createPet body

export interface ExpectedPet { name: string, categoryId: bigint, status?: string }

export type BodyVerdict =
  | { status: 400, why: string }
  | { status: 201, pet: ExpectedPet }
  /** The contract allows a refusal (400) or an exact acceptance. */
  | { status: 'either', pet?: ExpectedPet, why: string }

export const utf8 = new TextDecoder('utf-8', { fatal: true })

export function bodyVerdict (bytes: Buffer, newPet: DocumentValidatorFn): BodyVerdict {
  if (bytes.length === 0) return { status: 400, why: 'empty body' }
  let text: string
  try {
    // Like the service, a leading byte order mark is ignored (RFC 8259 allows it).
    text = utf8.decode(bytes)
  } catch {
    return { status: 400, why: 'invalid UTF-8' }
  }
  let value: unknown
  try {
    value = JSON.parse(text)
  } catch {
    return { status: 400, why: 'not JSON' }
  }
  // The document's NewPet schema: exactly the fields, types, enum, length and pattern.
  if (!newPet(value)) return { status: 400, why: 'NewPet schema' }
  const tree = parseTree(text) as JObject
  const keys = tree.entries.map(([key]) => key)
  const last = (key: string): JValue | undefined => tree.entries.filter(([name]) => name === key).pop()?.[1]
  const parsed = value as { name: string, categoryId: number, status?: string }
  const literal = (last('categoryId') as { text: string }).text
  const exact = exactInteger(literal)
  if (new Set(keys).size !== keys.length) {
    // JSON.parse keeps the last of repeated keys; the contract says nothing of repeated keys.
    const pet = exact === 'fraction' || exact === 'huge' ? undefined : { name: parsed.name, categoryId: exact, ...(parsed.status !== undefined && { status: parsed.status }) }
    return { status: 'either', pet, why: 'repeated keys' }
  }
  // docs/decisions.md: categoryId is a JSON integer in the int64 range, never silently rounded.
  if (exact === 'fraction') return { status: 400, why: `categoryId ${literal} is not an integer` }
  if (exact === 'huge' || exact < INT64_MIN || exact > INT64_MAX) return { status: 400, why: `categoryId ${literal} is outside int64` }
  const pet = { name: parsed.name, categoryId: exact, ...(parsed.status !== undefined && { status: parsed.status }) }
  if (exact > MAX_SAFE || exact < -MAX_SAFE) {
    // Beyond 2^53 the service re-reads the literal: plain digits round-trip, other spellings may be refused.
    return PLAIN_INTEGER.test(literal) ? { status: 201, pet } : { status: 'either', pet, why: `categoryId ${literal} beyond 2^53 not in plain digits` }
  }
  return { status: 201, pet }
}

export type DocumentValidatorFn = (value: unknown) => boolean

// ---------------------------------------------------------------------------------------
// Harness: one application per property, every request counted and checked.

let totalRequests = 0

/** Counts a request a fuzz test sent without send() (the portal's forms), for the file's total. */
export function countRequest (): void {
  totalRequests++
}

export interface FuzzApp extends TestApp {
  doc: OpenApiDocument
  validator: DocumentValidator
  /** 201 answers to POST /v1/pets: the store must hold exactly this many animals. */
  created: number
  requests: number
}

/**
 * Load shedding is off: its 503 answers the event loop of a busy test machine, not the
 * request, and the oracle allows no 5xx. Everything else is the default configuration.
 */
export const FUZZ_ENV = { LOAD_SHED_EVENT_LOOP_DELAY_MS: '0' }

export async function fuzzApp (t: Scope): Promise<FuzzApp> {
  const testApp = await buildTestApp(t, FUZZ_ENV)
  const doc = await fetchOpenApiDocument(testApp.app)
  return { ...testApp, doc, validator: documentValidator(doc), created: 0, requests: 1 }
}

export interface Sent {
  /** Which generator and mutation made the request, for failure messages and statistics. */
  label: string
  method: string
  url: string
  headers: Record<string, string | string[]>
  payload?: Buffer
}

export interface Received {
  status: number
  headers: Record<string, string | string[] | number | undefined>
  body: string
}

export function describeSent (sent: Sent, received?: Received): string {
  let payload = ''
  if (sent.payload !== undefined) {
    let text: string
    try {
      text = JSON.stringify(utf8.decode(sent.payload.subarray(0, 300)))
    } catch {
      text = `${JSON.stringify(sent.payload.subarray(0, 300).toString('latin1'))} (not UTF-8, shown as Latin-1)`
    }
    payload = `\n  body (${sent.payload.length} bytes): ${text}`
  }
  const answer = received === undefined ? '' : `\n  → ${received.status} ${JSON.stringify(received.headers)} ${received.body.slice(0, 400)}`
  return `[${sent.label}] ${sent.method} ${sent.url.slice(0, 300)}\n  headers: ${JSON.stringify(sent.headers).slice(0, 400)}${payload}${answer}\n  (${REPLAY})`
}

export async function send (fz: FuzzApp, sent: Sent): Promise<Received> {
  fz.requests++
  totalRequests++
  const response = await fz.app.inject({
    method: sent.method as InjectOptions['method'],
    url: sent.url,
    headers: sent.headers,
    ...(sent.payload !== undefined && { payload: sent.payload })
  })
  const received: Received = { status: response.statusCode, headers: response.headers, body: response.body }
  if (received.status === 201) fz.created++
  assertPrototypesUnchanged(describeSent(sent, received))
  return received
}

export async function storedAnimals (fz: FuzzApp): Promise<number> {
  return (await fz.store.pets.listPage({ status: undefined, afterId: 0, limit: 1_000_000 })).pets.length
}

export async function assertNothingElseCreated (fz: FuzzApp): Promise<void> {
  assert.equal(await storedAnimals(fz), fz.created, `the store holds a different number of animals than the ${fz.created} answers 201: a refused request created one`)
}

/** How the contract routes a request. */
export type Route =
  | { kind: 'operation', template: string, method: 'get' | 'post' }
  | { kind: 'not-found' }
  | { kind: 'other-method', template: string, allow: string[] }
  | { kind: 'options', template: string, allow: string[] }

export interface Expectation {
  route: Route
  /** Statuses the contract allows for this request (usually exactly one). */
  status: number[]
  /** Whether the request must be authenticated (false for the public document and paths outside /v1). */
  authenticated: boolean
  auth: AuthCase
}

/**
 * The generic oracle: no 5xx; a status documented for the operation (or the routing
 * answers of the contract); application/json with a body that matches the documented
 * schema; the error shape and headers of the contract; then the exact expected status.
 */
export function checkResponse (fz: FuzzApp, sent: Sent, received: Received, expected: Expectation): void {
  const context = describeSent(sent, received)
  const { status } = received
  const head = sent.method === 'HEAD'
  const route = expected.route
  // No 5xx, except one an operation documents for itself (501 of the placeholder GET /store/orders).
  const ownDocumented = route.kind === 'operation' && String(status) in (fz.doc.paths[route.template]?.[route.method]?.responses ?? {})
  assert.ok(status < 500 || ownDocumented, `5xx answer:\n${context}`)

  let schemaAt: string[]
  if (status === 401) {
    assert.ok(expected.authenticated, `401 on a request that needs no key:\n${context}`)
    assert.match(String(received.headers['www-authenticate']), /^Bearer realm="animal-store"/, `401 without WWW-Authenticate:\n${context}`)
    if (expected.auth.challenge === 'invalid_token') assert.match(String(received.headers['www-authenticate']), /error="invalid_token"/, `401 for a bad key without error="invalid_token":\n${context}`)
    if (expected.auth.challenge === 'plain') assert.doesNotMatch(String(received.headers['www-authenticate']), /error=/, `401 without any key carries an error:\n${context}`)
  }
  if (route.kind === 'operation') {
    const documented = fz.doc.paths[route.template]?.[route.method]?.responses ?? {}
    assert.ok(String(status) in documented, `status ${status} is not documented for ${route.method.toUpperCase()} ${route.template} (documented: ${Object.keys(documented).join(', ')}):\n${context}`)
    schemaAt = ['paths', route.template, route.method, 'responses', String(status), 'content', 'application/json', 'schema']
  } else if (route.kind === 'not-found') {
    assert.ok([404, 401].includes(status), `an unknown path answered ${status}, not 404 (or 401):\n${context}`)
    schemaAt = ['components', 'schemas', 'Error']
  } else if (route.kind === 'other-method') {
    assert.ok([405, 401].includes(status), `${sent.method} on ${route.template} answered ${status}, not 405 (or 401):\n${context}`)
    schemaAt = ['components', 'schemas', 'Error']
    if (status === 405) assert.deepEqual(String(received.headers.allow ?? '').split(',').map((name) => name.trim()).sort(), [...route.allow].sort(), `Allow of a 405:\n${context}`)
  } else {
    assert.ok([204, 401].includes(status), `OPTIONS on ${route.template} answered ${status}, not 204 (or 401):\n${context}`)
    schemaAt = ['components', 'schemas', 'Error']
    if (status === 204) assert.deepEqual(String(received.headers.allow ?? '').split(',').map((name) => name.trim()).sort(), [...route.allow].sort(), `Allow of OPTIONS:\n${context}`)
  }

  if (route.kind === 'operation' && route.template === '/pets/{petId}') {
    for (const [name, pattern] of Object.entries(DEPRECATION)) assert.match(String(received.headers[name]), pattern, `getPet answer without ${name}:\n${context}`)
  }

  if (status === 204 || status === 304) {
    assert.equal(received.body, '', `${status} with a body:\n${context}`)
  } else {
    assert.match(String(received.headers['content-type']), JSON_TYPE, `content type is not application/json:\n${context}`)
    if (head) {
      assert.equal(received.body, '', `HEAD answer with a body:\n${context}`)
    } else {
      let body: unknown
      assert.doesNotThrow(() => { body = JSON.parse(received.body) }, `the body is not JSON:\n${context}`)
      const validate = fz.validator.validatorAt(...schemaAt)
      assert.ok(validate, `the document has no application/json schema at ${schemaAt.join(' ')}:\n${context}`)
      assert.ok(validate(body), `the body does not match the document (${schemaAt.join(' ')}): ${fz.validator.errorsText(validate)}:\n${context}`)
      if (status >= 400) {
        const error = body as { code: string, message: string, status: number }
        assert.equal(error.status, status, `error body status differs from the HTTP status:\n${context}`)
        assert.equal(error.code, CODE_BY_STATUS[status], `error code of a ${status}:\n${context}`)
        assert.doesNotMatch(error.message, /node_modules|SQLITE_|\n\s+at /, `an internal detail reaches the client:\n${context}`)
      }
    }
  }
  if (status === 201) assert.match(String(received.headers.location), /^\/v1\/pets\/[1-9][0-9]*$/, `201 without Location:\n${context}`)

  assert.ok(expected.status.includes(status), `expected ${expected.status.join(' or ')}, got ${status}:\n${context}`)
}

// ---------------------------------------------------------------------------------------
// Shared generators

/** How the Authorization header is sent, and what a 401 must say about it. */
export interface AuthCase {
  label: string
  header: string | undefined
  valid: boolean
  /** The WWW-Authenticate a 401 must carry: without error (no key), with error="invalid_token" (a bearer key that is not valid), or either. */
  challenge: 'plain' | 'invalid_token' | 'any'
}

export const BASE62 = '0123456789ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz'

export function authArbitrary (key: string, validWeight = 12): fc.Arbitrary<AuthCase> {
  const valid = (label: string, header: string): AuthCase => ({ label, header, valid: true, challenge: 'any' })
  const invalid = (label: string, header: string | undefined, challenge: AuthCase['challenge']): AuthCase => ({ label, header, valid: false, challenge })
  const mangled = fc.tuple(fc.integer({ min: 4, max: key.length - 1 }), fc.integer({ min: 1, max: 61 })).map(([at, shift]) => {
    const replaced = BASE62[(BASE62.indexOf(key[at] ?? '0') + shift) % 62] ?? 'x'
    return invalid('one character of the key changed', `Bearer ${key.slice(0, at)}${replaced}${key.slice(at + 1)}`, 'invalid_token')
  })
  return fc.oneof(
    { weight: validWeight, arbitrary: fc.constant(valid('Bearer key', `Bearer ${key}`)) },
    {
      weight: 2,
      arbitrary: fc.constantFrom(
        valid('lower-case scheme', `bearer ${key}`),
        valid('upper-case scheme', `BEARER ${key}`),
        valid('mixed-case scheme', `BeArEr ${key}`),
        valid('several spaces', `Bearer   ${key}`)
      )
    },
    {
      weight: 3,
      arbitrary: fc.oneof(
        fc.constantFrom(
          invalid('no Authorization', undefined, 'plain'),
          invalid('empty Authorization', '', 'plain'),
          invalid('Basic scheme', 'Basic dXNlcjpwYXNz', 'plain'),
          invalid('Token scheme', `Token ${key}`, 'plain'),
          invalid('key without scheme', key, 'plain'),
          invalid('scheme glued to the key', `Bearer${key}`, 'plain'),
          invalid('scheme alone', 'Bearer', 'any'),
          invalid('scheme and space', 'Bearer ', 'any'),
          invalid('key twice', `Bearer ${key} ${key}`, 'any'),
          invalid('tab separator', `Bearer\t${key}`, 'any'),
          invalid('key truncated', `Bearer ${key.slice(0, -1)}`, 'invalid_token'),
          invalid('key extended', `Bearer ${key}0`, 'invalid_token'),
          invalid('key in lower case', `Bearer ${key.toLowerCase()}`, 'invalid_token'),
          invalid('well-formed unknown key', `Bearer ${generateApiKey().key}`, 'invalid_token')
        ),
        mangled,
        fc.string({ unit: 'binary-ascii', minLength: 1, maxLength: 60 })
          .filter((text) => /^[\x21-\x7e][\x20-\x7e]*$/.test(text) && !text.includes(key))
          .map((text) => invalid('printable garbage', text, 'any'))
      )
    }
  )
}

export function authHeaders (auth: AuthCase): Record<string, string> {
  return auth.header === undefined ? {} : { authorization: auth.header }
}

/** Code points for strings: mostly ASCII, then every plane and the usual troublemakers. */
export const codePointArbitrary = fc.oneof(
  { weight: 8, arbitrary: fc.integer({ min: 0x20, max: 0x7e }) },
  { weight: 2, arbitrary: fc.integer({ min: 0x80, max: 0x7ff }) },
  { weight: 2, arbitrary: fc.integer({ min: 0x800, max: 0xffff }) },
  { weight: 2, arbitrary: fc.integer({ min: 0x10000, max: 0x10ffff }) },
  {
    weight: 2,
    arbitrary: fc.constantFrom(0x85, 0xa0, 0xad, 0x301, 0x200b, 0x200d, 0x200e, 0x202e, 0x2028, 0x2029, 0x2060, 0x3000, 0xe000, 0xfeff, 0xfffd, 0xfffe, 0xffff,
      0x1f436, 0x1f1fa, 0x1f3fd, 0xe0041, 0x10ffff, 0x22, 0x5c, 0x2f, 0x3c, 0x26, 0x27)
  }
)

export const unicodeString = (maxLength: number): fc.Arbitrary<string> => fc.array(codePointArbitrary, { maxLength }).map((points) => String.fromCodePoint(...points))

/** The first surrogate code point, and how many there are. */
const SURROGATES = { first: 0xd800, count: 0x800 }

/**
 * fast-check's 'binary' string unit (every code point but the surrogates), drawn alike, with an
 * unmapper that computes instead of looking up. fc.string unmaps the characters of the strings it
 * slips in (__proto__, valueOf …) with its unit's unmapper, and the built-in one first builds a map
 * of all 1.1 million code points: seconds of CPU each time this file is loaded.
 */
export const binaryUnit: fc.Arbitrary<string> = fc.nat({ max: 0x10ffff - SURROGATES.count }).map(
  (index) => String.fromCodePoint(index < SURROGATES.first ? index : index + SURROGATES.count),
  (value) => {
    const codePoint = typeof value === 'string' ? value.codePointAt(0) : undefined
    if (codePoint === undefined || String.fromCodePoint(codePoint) !== value || (codePoint >= SURROGATES.first && codePoint < SURROGATES.first + SURROGATES.count)) {
      throw new Error('not a code point of the binary unit')
    }
    return codePoint < SURROGATES.first ? codePoint : codePoint - SURROGATES.count
  }
)

/** Strings a percent-encoder must cope with: lone surrogates included. */
export const wildString = fc.oneof(
  unicodeString(12),
  fc.string({ unit: binaryUnit, maxLength: 8 }),
  fc.string({ unit: 'grapheme-ascii', maxLength: 12 })
)

/** JSON number literals: ordinary, huge, tiny, at the int64 and 2^53 edges, and spelled oddly. */
export const numberLiteral: fc.Arbitrary<string> = fc.oneof(
  { weight: 3, arbitrary: fc.bigInt({ min: INT64_MIN, max: INT64_MAX }).map(String) },
  { weight: 2, arbitrary: fc.bigInt({ min: -(2n ** 80n), max: 2n ** 80n }).map(String) },
  { weight: 2, arbitrary: fc.double({ noNaN: true, noDefaultInfinity: true }).map((value) => JSON.stringify(value)) },
  {
    weight: 2,
    arbitrary: fc.tuple(fc.bigInt({ min: -(10n ** 20n), max: 10n ** 20n }), fc.integer({ min: -25, max: 25 }), fc.constantFrom('e', 'E', 'e+', 'E-'))
      .map(([digits, exponent, mark]) => mark.endsWith('-') ? `${digits}${mark}${Math.abs(exponent)}` : `${digits}${mark}${exponent}`)
  },
  { weight: 1, arbitrary: fc.tuple(fc.bigInt({ min: -(2n ** 64n), max: 2n ** 64n }), fc.stringMatching(/^[0-9]{1,20}$/)).map(([whole, fraction]) => `${whole}.${fraction}`) },
  {
    weight: 3,
    arbitrary: fc.constantFrom(
      '0', '-0', '0.0', '-0.0', '1', '-1', '1.0', '1e2', '1E+2', '100e-2', '1.5', '-1.5', '0.5',
      '9007199254740991', '9007199254740992', '9007199254740993', '-9007199254740993', '9007199254740993.0', '9007199254740992.0',
      '9223372036854775807', '-9223372036854775808', '9223372036854775808', '-9223372036854775809', '18446744073709551616',
      '9.2e18', '9.223372036854775807e18', '92233720368547758070e-1',
      '1e400', '-1e400', '1e-400', '-1e-400', '5e-324', '4.9e-324', '1e308', '1.7976931348623157e308',
      '1.0000000000000001', '0.99999999999999999', '123456789012345678901234567890', `1${'0'.repeat(400)}`, `0.${'0'.repeat(400)}1`
    )
  }
)

export const jsonKey = fc.oneof(
  fc.constantFrom('name', 'categoryId', 'status', 'id', 'ID', 'Name', 'name ', 'categoryID', 'category_id', '__proto__', 'constructor', 'prototype', 'toString', 'hasOwnProperty', '', ' '),
  unicodeString(8)
)

export const scalarJson: fc.Arbitrary<JValue> = fc.oneof(
  wildString.map((v): JValue => ({ k: 'str', v })),
  fc.constantFrom('5', '', ' ', 'available', 'AVAILABLE', 'true', 'null').map((v): JValue => ({ k: 'str', v })),
  numberLiteral.map((text): JValue => ({ k: 'num', text })),
  fc.constantFrom('true', 'false', 'null').map((text): JValue => ({ k: 'lit', text }))
)

export const anyJson: fc.Arbitrary<JValue> = fc.letrec<{ value: JValue }>((tie) => ({
  value: fc.oneof(
    { maxDepth: 3, depthIdentifier: 'json' },
    scalarJson,
    fc.array(tie('value'), { maxLength: 3, depthIdentifier: 'json' }).map((items): JValue => ({ k: 'arr', items })),
    fc.array(fc.tuple(jsonKey, tie('value')), { maxLength: 3, depthIdentifier: 'json' }).map((entries): JValue => ({ k: 'obj', entries }))
  )
})).value

/**
 * A payload that tries to reach Object.prototype: `__proto__` or `constructor.prototype`
 * holding a pollution key, nested at any depth in objects and arrays.
 */
export const pollutionJson: fc.Arbitrary<JValue> = fc.tuple(
  fc.constantFrom('__proto__', 'constructor'),
  fc.constantFrom(...POLLUTION_KEYS),
  fc.array(fc.constantFrom('obj', 'arr'), { maxLength: 24 })
).map(([via, key, wrappers]) => {
  const planted: JValue = { k: 'obj', entries: [[key, { k: 'lit', text: 'true' }]] }
  let node: JValue = via === '__proto__'
    ? { k: 'obj', entries: [['__proto__', planted]] }
    : { k: 'obj', entries: [['constructor', { k: 'obj', entries: [['prototype', planted]] }]] }
  for (const wrapper of wrappers) node = wrapper === 'arr' ? { k: 'arr', items: [node] } : { k: 'obj', entries: [['a', node]] }
  return node
})

/** Percent-encodes every UTF-8 byte of a string (lone surrogates as the bytes of U+FFFD would not do: as ED xx xx). */
export function percentEncodeAll (text: string, lower: boolean): string {
  let out = ''
  for (let index = 0; index < text.length; index++) {
    const unit = text.charCodeAt(index)
    let bytes: number[]
    if (unit >= 0xd800 && unit <= 0xdfff) {
      const point = text.codePointAt(index) ?? unit
      if (point > 0xffff) index++
      bytes = point > 0xffff
        ? [0xf0 | (point >> 18), 0x80 | ((point >> 12) & 0x3f), 0x80 | ((point >> 6) & 0x3f), 0x80 | (point & 0x3f)]
        : [0xe0 | (unit >> 12), 0x80 | ((unit >> 6) & 0x3f), 0x80 | (unit & 0x3f)]
    } else {
      bytes = [...Buffer.from(String.fromCharCode(unit), 'utf8')]
    }
    out += bytes.map((byte) => `%${byte.toString(16).padStart(2, '0')}`).map((hex) => lower ? hex : hex.toUpperCase()).join('')
  }
  return out
}

/** Encodes a URL component the ways clients do: minimally, every byte (either hex case), or with + for spaces. */
export function encodeComponent (text: string, style: 'minimal' | 'all' | 'all-lower' | 'plus'): string {
  const minimal = (): string => {
    try {
      return encodeURIComponent(text)
    } catch {
      return percentEncodeAll(text, false)
    }
  }
  switch (style) {
    case 'all': return percentEncodeAll(text, false)
    case 'all-lower': return percentEncodeAll(text, true)
    case 'plus': return minimal().replace(/%20/g, '+')
    default: return minimal()
  }
}

export const encodingStyle = fc.constantFrom<'minimal' | 'all' | 'all-lower' | 'plus'>('minimal', 'minimal', 'minimal', 'all', 'all-lower', 'plus')

/** Byte sequences that are not UTF-8. */
export const INVALID_UTF8: number[][] = [[0xff], [0xfe], [0x80], [0xbf], [0xc0, 0xaf], [0xc1, 0xbf], [0xe0, 0x80, 0xaf], [0xed, 0xa0, 0x80], [0xed, 0xbf, 0xbf],
  [0xf4, 0x90, 0x80, 0x80], [0xf8, 0x88, 0x80, 0x80, 0x80], [0xc3], [0xe2, 0x82], [0xf0, 0x9f, 0x90], [0xc3, 0x28], [0xe9]]

/** Malformed percent-encodings. */
export const BAD_ESCAPES = ['%', '%Z', '%ZZ', '%G0', '%C3', '%C0%AF', '%ED%A0%80', '%FF', '%E2%82', '%F4%90%80%80', '%%']

/** The Content-Type family: what each header makes of a request body, as observed and as the contract allows. */
export interface ContentTypeCase { label: string, header: string | string[] | undefined, json: boolean }

export const CONTENT_TYPES: ContentTypeCase[] = [
  { label: 'application/json', header: 'application/json', json: true },
  // Optional whitespace around a field value is not part of it (RFC 9110 5.5); Node strips it on a real socket.
  { label: 'trailing tab', header: 'application/json\t', json: true },
  { label: 'leading space', header: ' application/json', json: true },
  // Media types are case-insensitive (RFC 9110 8.3.1).
  { label: 'upper case', header: 'APPLICATION/JSON', json: true },
  { label: 'mixed case', header: 'Application/Json', json: true },
  // An empty parameter: RFC 9110 tolerates it, Fastify's media-type parser does not; refusing is within the contract.
  { label: 'trailing semicolon', header: 'application/json;', json: false },
  { label: 'two semicolons', header: 'application/json;;', json: false },
  { label: 'charset=utf-8', header: 'application/json; charset=utf-8', json: true },
  { label: 'charset=UTF-8 without space', header: 'application/json;charset=UTF-8', json: true },
  { label: 'quoted charset', header: 'application/json; charset="utf-8"', json: true },
  { label: 'space before the semicolon', header: 'application/json ; charset=utf-8', json: true },
  { label: 'charset=latin1', header: 'application/json; charset=latin1', json: false },
  { label: 'charset=utf-16', header: 'application/json; charset=utf-16', json: false },
  { label: 'charset=utf8', header: 'application/json; charset=utf8', json: false },
  { label: 'empty charset', header: 'application/json; charset=', json: false },
  { label: 'unknown parameter', header: 'application/json; foo=bar', json: true },
  // Two Content-Type fields are refused with 400 before anything reads the body (src/http/steps/message-framing.ts).
  { label: 'two Content-Type headers, both JSON', header: ['application/json', 'application/json'], json: true },
  { label: 'two Content-Type headers, JSON first', header: ['application/json', 'text/plain'], json: true },
  { label: 'two Content-Type headers, text/plain first', header: ['text/plain', 'application/json'], json: false },
  { label: 'two types in one header', header: 'application/json, text/plain', json: false },
  { label: 'no Content-Type', header: undefined, json: false },
  { label: 'empty Content-Type', header: '', json: false },
  { label: 'text/plain', header: 'text/plain', json: false },
  { label: 'text/plain; charset=utf-8', header: 'text/plain; charset=utf-8', json: false },
  { label: 'text/json', header: 'text/json', json: false },
  { label: 'form-encoded', header: 'application/x-www-form-urlencoded', json: false },
  { label: 'multipart', header: 'multipart/form-data; boundary=x', json: false },
  { label: 'application/jsonx', header: 'application/jsonx', json: false },
  { label: 'application/json-patch+json', header: 'application/json-patch+json', json: false },
  { label: 'application/merge-patch+json', header: 'application/merge-patch+json', json: false },
  { label: 'application/ld+json', header: 'application/ld+json', json: false },
  { label: 'application/*', header: 'application/*', json: false },
  { label: '*/*', header: '*/*', json: false },
  { label: 'type without subtype', header: 'application', json: false }
]

export interface ContentEncodingCase { label: string, header: string | string[] | undefined, identity: boolean }

export const CONTENT_ENCODINGS: ContentEncodingCase[] = [
  { label: 'no Content-Encoding', header: undefined, identity: true },
  { label: 'identity', header: 'identity', identity: true },
  { label: 'IDENTITY', header: 'IDENTITY', identity: true },
  { label: 'identity with spaces', header: ' identity ', identity: true },
  { label: 'gzip', header: 'gzip', identity: false },
  { label: 'x-gzip', header: 'x-gzip', identity: false },
  { label: 'deflate', header: 'deflate', identity: false },
  { label: 'br', header: 'br', identity: false },
  { label: 'zstd', header: 'zstd', identity: false },
  { label: 'compress', header: 'compress', identity: false },
  { label: 'empty', header: '', identity: false },
  { label: 'identity, gzip', header: 'identity, gzip', identity: false },
  { label: 'gzip, identity', header: 'gzip, identity', identity: false },
  { label: 'two headers identity and gzip', header: ['identity', 'gzip'], identity: false }
]

// ---------------------------------------------------------------------------------------
// Generators derived from the document

/** Valid values of a schema of the document: objects, strings (length, pattern, enum), int64 integers. */
export function valueArbitrary (doc: OpenApiDocument, schemaOrRef: Schema): fc.Arbitrary<JValue> {
  const schema = deref(doc, schemaOrRef)
  if (Array.isArray(schema.enum)) return fc.constantFrom(...(schema.enum as string[])).map((v): JValue => ({ k: 'str', v }))
  if (schema.type === 'object') return objectArbitrary(doc, schema)
  if (schema.type === 'string') return stringArbitrary(schema).map((v): JValue => ({ k: 'str', v }))
  if (schema.type === 'integer') {
    const int64 = schema.format === 'int64'
    // JSON.parse reads the document's 9223372036854775807 as the nearest double, 2^63: int64 keeps its own bounds.
    const clamp = (value: bigint): bigint => int64 ? (value < INT64_MIN ? INT64_MIN : value > INT64_MAX ? INT64_MAX : value) : value
    const min = clamp(typeof schema.minimum === 'number' ? BigInt(schema.minimum) : int64 ? INT64_MIN : -(2n ** 31n))
    const max = clamp(typeof schema.maximum === 'number' ? BigInt(schema.maximum) : int64 ? INT64_MAX : 2n ** 31n - 1n)
    const edges = [min, max, 0n, 1n, -1n, MAX_SAFE, MAX_SAFE + 1n, MAX_SAFE + 2n, -MAX_SAFE - 2n].filter((value) => value >= min && value <= max)
    return fc.oneof(
      { weight: 4, arbitrary: fc.bigInt({ min, max }) },
      { weight: 2, arbitrary: fc.integer({ min: -1000, max: 1000 }).map(BigInt).filter((value) => value >= min && value <= max) },
      { weight: 1, arbitrary: fc.constantFrom(...edges) }
    ).map((value): JValue => ({ k: 'num', text: value.toString() }))
  }
  throw new Error(`no generator for schema ${JSON.stringify(schema)}`)
}

/** Valid strings of a string schema: minLength..maxLength code points, each allowed by the pattern. */
export function stringArbitrary (schema: Schema): fc.Arbitrary<string> {
  const min = typeof schema.minLength === 'number' ? schema.minLength : 0
  const max = typeof schema.maxLength === 'number' ? schema.maxLength : 64
  let point = codePointArbitrary
  if (typeof schema.pattern === 'string') {
    // Only patterns of the form ^[class]*$ constrain characters one by one.
    assert.match(schema.pattern, /^\^\[[^\]]+\]\*\$$/, `stringArbitrary cannot generate strings for the pattern ${schema.pattern}`)
    const pattern = new RegExp(schema.pattern, 'u')
    point = point.filter((code) => pattern.test(String.fromCodePoint(code)))
  }
  const toString = (points: number[]): string => String.fromCodePoint(...points)
  return fc.oneof(
    { weight: 6, arbitrary: fc.array(point, { minLength: min, maxLength: Math.min(max, min + 24) }).map(toString) },
    { weight: 1, arbitrary: fc.array(point, { minLength: Math.max(min, max - 2), maxLength: max }).map(toString) },
    { weight: 1, arbitrary: fc.array(fc.constantFrom(0x20, 0xa0, 0x3000), { minLength: Math.max(min, 1), maxLength: Math.min(max, 5) }).map(toString) }
  ).filter((text) => typeof schema.pattern !== 'string' || new RegExp(schema.pattern, 'u').test(text))
}

/** Valid objects: every required property, any subset of the optional ones, in any order. */
export function objectArbitrary (doc: OpenApiDocument, schemaOrRef: Schema): fc.Arbitrary<JObject> {
  const schema = deref(doc, schemaOrRef)
  const properties = Object.entries((schema.properties ?? {}) as Record<string, Schema>)
  const required = new Set((schema.required ?? []) as string[])
  const entries = properties.map(([name, property]) => required.has(name)
    ? valueArbitrary(doc, property).map((value): Array<[string, JValue]> => [[name, value]])
    : fc.option(valueArbitrary(doc, property), { freq: 2 }).map((value): Array<[string, JValue]> => value === null ? [] : [[name, value]]))
  return fc.tuple(fc.tuple(...entries), fc.array(fc.nat(), { minLength: properties.length, maxLength: properties.length })).map(([chosen, order]): JObject => {
    const flat = chosen.flat()
    const ranked = flat.map((entry, index) => ({ entry, rank: order[index] ?? 0 })).sort((a, b) => a.rank - b.rank)
    return { k: 'obj', entries: ranked.map(({ entry }) => entry) }
  })
}

export interface BodyCase { label: string, bytes: Buffer }

export function withEntry (base: JObject, at: number, entry: [string, JValue]): JObject {
  const entries = [...base.entries]
  entries.splice(at % (entries.length + 1), 0, entry)
  return { k: 'obj', entries }
}

export function replaceEntry (base: JObject, key: string, value: JValue): JObject {
  return { k: 'obj', entries: base.entries.map(([name, item]): [string, JValue] => [name, name === key ? value : item]) }
}

/** Bodies for POST /pets: valid NewPet objects from the document, and mutations of them at the tree, text and byte levels. */
export function createBodyArbitrary (doc: OpenApiDocument, newPetSchema: Schema): fc.Arbitrary<BodyCase> {
  const valid = objectArbitrary(doc, newPetSchema)
  const schema = deref(doc, newPetSchema)
  const properties = Object.keys((schema.properties ?? {}) as Record<string, unknown>)
  const nameSchema = deref(doc, (schema.properties as Record<string, Schema>).name)
  const maxName = typeof nameSchema.maxLength === 'number' ? nameSchema.maxLength : 200
  const style = fc.constantFrom<Style>('compact', 'compact', 'spaced', 'escaped', 'keys-escaped')
  const tree = (label: string, arbitrary: fc.Arbitrary<JValue>): fc.Arbitrary<BodyCase> =>
    fc.tuple(arbitrary, style).map(([value, how]) => ({ label, bytes: Buffer.from(serialize(value, how)) }))

  const oddName = fc.oneof(
    fc.constant(''),
    fc.array(codePointArbitrary, { minLength: maxName + 1, maxLength: maxName + 40 }).map((points) => String.fromCodePoint(...points)),
    fc.integer({ min: maxName + 1, max: 20_000 }).map((length) => 'x'.repeat(length)),
    fc.tuple(unicodeString(20), fc.integer({ min: 0, max: 0x1f }), fc.nat()).map(([text, control, at]) => text.slice(0, at % (text.length + 1)) + String.fromCharCode(control) + text.slice(at % (text.length + 1))),
    fc.tuple(unicodeString(20), fc.nat()).map(([text, at]) => text.slice(0, at % (text.length + 1)) + '\u007f' + text.slice(at % (text.length + 1))),
    fc.tuple(unicodeString(20), fc.integer({ min: 0xd800, max: 0xdfff }), fc.nat()).map(([text, unit, at]) => text.slice(0, at % (text.length + 1)) + String.fromCharCode(unit) + text.slice(at % (text.length + 1))),
    fc.constantFrom(' ', '\u00a0', 'a\u0085b', '\ufeff', '\u202eRex', 'Rex\u0000', '\ud83d', '\udc36\ud83d', '🐶'.repeat(maxName), '🐶'.repeat(maxName + 1), 'é'.repeat(maxName), `e${'\u0301'.repeat(maxName - 1)}`)
  )
  const oddStatus = fc.oneof(
    fc.constantFrom('Available', 'AVAILABLE', 'available ', ' available', '', 'lost', 'sold\u0000', 'pending\n', 'availabl', 'available\u200b'),
    wildString
  )

  const structural = valid.chain((base) => fc.oneof(
    fc.constantFrom(...base.entries.map(([key]) => key)).map((key): BodyCase => ({ label: `without ${key}`, bytes: Buffer.from(serialize({ k: 'obj', entries: base.entries.filter(([name]) => name !== key) })) })),
    tree('extra field', fc.tuple(jsonKey, anyJson, fc.nat()).map(([key, value, at]) => withEntry(base, at, [key, value]))),
    tree('wrong type', fc.tuple(fc.constantFrom(...properties), anyJson).map(([key, value]) => base.entries.some(([name]) => name === key) ? replaceEntry(base, key, value) : withEntry(base, 0, [key, value]))),
    tree('__proto__/constructor at depth', fc.tuple(pollutionJson, fc.constantFrom('field', 'value', 'top'), fc.constantFrom(...properties), fc.nat()).map(([pollution, where, key, at]): JValue => {
      if (where === 'value') return replaceEntry(base, key, pollution)
      if (where === 'top' && pollution.k === 'obj') return { k: 'obj', entries: [...base.entries, ...pollution.entries] }
      return withEntry(base, at, ['extra', pollution])
    })),
    tree('repeated field', fc.tuple(fc.constantFrom(...base.entries), fc.oneof(anyJson, valueArbitrary(doc, newPetSchema).chain((other) => fc.constantFrom(...(other as JObject).entries.map(([, value]) => value)))), fc.boolean(), fc.nat())
      .map(([[key, value], other, same, at]) => withEntry(base, at, [key, same ? value : other]))),
    tree('not an object', fc.oneof(anyJson.filter((value) => value.k !== 'obj'), fc.constant<JValue>({ k: 'arr', items: [base] }))),
    tree('categoryId literal', numberLiteral.map((text) => replaceEntry(base, 'categoryId', { k: 'num', text }))),
    tree('odd name', oddName.map((v) => replaceEntry(base, 'name', { k: 'str', v }))),
    tree('odd status', oddStatus.map((v) => base.entries.some(([key]) => key === 'status') ? replaceEntry(base, 'status', { k: 'str', v }) : withEntry(base, 9, ['status', { k: 'str', v }])))
  ))

  const textual = fc.tuple(valid, style).chain(([base, how]) => {
    const text = serialize(base, how)
    return fc.oneof(
      fc.nat({ max: text.length - 1 }).map((at): BodyCase => ({ label: 'truncated', bytes: Buffer.from(text.slice(0, at)) })),
      fc.tuple(fc.nat({ max: text.length }), fc.constantFrom('{', '}', '"', ',', ':', '[', ']', '\\', '\u0000', 'x', '/', '\u00a0', '\n', '1', '.', '-'))
        .map(([at, char]): BodyCase => ({ label: 'character inserted', bytes: Buffer.from(text.slice(0, at) + char + text.slice(at)) })),
      fc.nat({ max: text.length - 1 }).map((at): BodyCase => ({ label: 'character deleted', bytes: Buffer.from(text.slice(0, at) + text.slice(at + 1)) })),
      fc.constantFrom(',', '}', ' // comment', '\u0000', 'x', '{}', '\n\t ', ' \r\n').map((tail): BodyCase => ({ label: 'text appended', bytes: Buffer.from(text + tail) })),
      fc.constantFrom('\ufeff', ' \t\n\r', '/* c */', '\u00a0', 'x').map((lead): BodyCase => ({ label: 'text prepended', bytes: Buffer.from(lead + text) })),
      fc.constantFrom('', ' ', '\n', 'null', 'true', '0', '""', '[]', '{}', '{', '}', 'NaN', 'Infinity', 'undefined',
        "{'name':'Rex','categoryId':1}", '{name:"Rex",categoryId:1}', '{"name":"Rex","categoryId":1,}', 'name=Rex&categoryId=1',
        '{"name":"Rex","categoryId":0x10}', '{"name":"Rex","categoryId":+1}', '{"name":"Rex","categoryId":01}', '{"name":"Rex","categoryId":.5}',
        '{"name":"Rex","categoryId":NaN}', '{"name":"Rex","categoryId":Infinity}', '{"name":"Rex\tTab","categoryId":1}', '{"name":"Rex","categoryId":1}{}')
        .map((whole): BodyCase => ({ label: 'replaced by odd text', bytes: Buffer.from(whole) }))
    )
  })

  const bytewise = fc.tuple(valid, fc.constantFrom(...INVALID_UTF8), fc.nat(), fc.boolean()).map(([base, sequence, at, inName]): BodyCase => {
    const text = Buffer.from(serialize(base))
    const nameAt = text.indexOf('"name":"')
    const position = inName && nameAt >= 0 ? nameAt + 8 : at % (text.length + 1)
    return { label: 'invalid UTF-8', bytes: Buffer.concat([text.subarray(0, position), Buffer.from(sequence), text.subarray(position)]) }
  })

  const latin1 = valid.map((base): BodyCase => ({ label: 'Latin-1 encoded', bytes: Buffer.from(serialize(replaceEntry(base, 'name', { k: 'str', v: 'Réglisse' })), 'latin1') }))

  const sized = fc.tuple(valid, fc.oneof(
    fc.constantFrom(MAX_BODY_BYTES - 1, MAX_BODY_BYTES, MAX_BODY_BYTES + 1, 100_000, 300_000),
    fc.integer({ min: MAX_BODY_BYTES - 64, max: MAX_BODY_BYTES + 64 })
  ), fc.boolean()).map(([base, size, broken]): BodyCase => {
    const text = serialize(base)
    const body = '{' + ' '.repeat(Math.max(0, size - Buffer.byteLength(text))) + text.slice(1)
    return { label: `padded to ${size} bytes${broken ? ', broken' : ''}`, bytes: Buffer.from(broken ? body.slice(0, -1) : body) }
  })

  return fc.oneof(
    { weight: 30, arbitrary: tree('valid', valid) },
    { weight: 45, arbitrary: structural },
    { weight: 12, arbitrary: textual },
    { weight: 6, arbitrary: bytewise },
    { weight: 1, arbitrary: latin1 },
    { weight: 3, arbitrary: sized }
  )
}

// ---------------------------------------------------------------------------------------
// createPet

export function newPetSchemaOf (doc: OpenApiDocument): Schema {
  const schema = doc.paths['/pets']?.post?.requestBody?.content['application/json']?.schema
  assert.ok(schema, 'the document gives no application/json request body for POST /pets')
  return schema
}

export interface CreateCase {
  body: BodyCase
  auth: AuthCase
  contentType: ContentTypeCase
  contentEncoding: ContentEncodingCase
}

export function createSent (contentCase: CreateCase): Sent {
  const headers: Record<string, string | string[]> = { ...authHeaders(contentCase.auth) }
  if (contentCase.contentType.header !== undefined) headers['content-type'] = contentCase.contentType.header
  if (contentCase.contentEncoding.header !== undefined) headers['content-encoding'] = contentCase.contentEncoding.header
  const labels = [contentCase.body.label, contentCase.auth.valid && contentCase.auth.label === 'Bearer key' ? '' : contentCase.auth.label,
    contentCase.contentType.label === 'application/json' ? '' : `Content-Type ${contentCase.contentType.label}`,
    contentCase.contentEncoding.header === undefined ? '' : `Content-Encoding ${contentCase.contentEncoding.label}`]
  return { label: `createPet: ${labels.filter(Boolean).join(', ')}`, method: 'POST', url: '/v1/pets', headers, payload: contentCase.body.bytes }
}

/** The statuses the contract allows: 401 first, then 415 (encoding, media type), 413 (size), 400 (body), 201. */
export function expectCreate (contentCase: CreateCase, verdict: BodyVerdict): Expectation {
  const route: Route = { kind: 'operation', template: '/pets', method: 'post' }
  const expectation = (status: number[]): Expectation => ({ route, status, authenticated: true, auth: contentCase.auth })
  if (!contentCase.auth.valid) return expectation([401])
  if (Array.isArray(contentCase.contentType.header)) return expectation([400])
  // No Content-Type and no bytes is no body at all: nothing to call unsupported, and the body is missing.
  if (contentCase.contentType.header === undefined && contentCase.body.bytes.length === 0) return expectation([400])
  const unsupported = !contentCase.contentEncoding.identity || !contentCase.contentType.json
  const tooLarge = contentCase.body.bytes.length > MAX_BODY_BYTES
  if (unsupported && tooLarge) return expectation([413, 415])
  if (unsupported) return expectation([415])
  if (tooLarge) return expectation([413])
  if (verdict.status === 'either') return expectation([201, 400])
  return expectation([verdict.status])
}

export function readPet (text: string): { id: string, name: string, categoryId: string, status?: string, keys: string[] } {
  const tree = parseTree(text)
  assert.equal(tree.k, 'obj', text)
  const fields = new Map((tree as JObject).entries)
  const scalar = (value: JValue | undefined): string | undefined => value === undefined ? undefined : value.k === 'str' ? value.v : value.k === 'num' ? value.text : undefined
  return {
    id: scalar(fields.get('id')) ?? '',
    name: scalar(fields.get('name')) ?? '',
    categoryId: scalar(fields.get('categoryId')) ?? '',
    ...(fields.has('status') && { status: scalar(fields.get('status')) }),
    keys: [...fields.keys()].sort()
  }
}

/** The created animal reads back exactly as sent: from the 201 body and from GET /v1/pets/{id}. */
export async function assertRoundTrip (fz: FuzzApp, sent: Sent, created: Received, pet: ExpectedPet): Promise<void> {
  const check = (text: string, where: string): string => {
    const read = readPet(text)
    const context = `${where}: ${text}\n${describeSent(sent)}`
    assert.deepEqual(read.keys, ['categoryId', 'id', 'name', ...(pet.status === undefined ? [] : ['status'])].sort(), `fields of the created animal (${where}):\n${context}`)
    assert.equal(read.name, pet.name, `name does not round-trip (${where}):\n${context}`)
    assert.equal(read.categoryId, pet.categoryId.toString(), `categoryId does not round-trip exactly (${where}):\n${context}`)
    assert.equal(read.status, pet.status, `status does not round-trip (${where}):\n${context}`)
    return read.id
  }
  const id = check(created.body, '201 body')
  assert.equal(created.headers.location, `/v1/pets/${id}`, `Location of the created animal:\n${describeSent(sent, created)}`)
  const readBack: Sent = { label: `read back after ${sent.label}`, method: 'GET', url: `/v1/pets/${id}`, headers: { authorization: `Bearer ${fz.key}` } }
  const fetched = await send(fz, readBack)
  checkResponse(fz, readBack, fetched, { route: { kind: 'operation', template: '/pets/{petId}', method: 'get' }, status: [200], authenticated: true, auth: { label: '', header: undefined, valid: true, challenge: 'any' } })
  check(fetched.body, `GET /v1/pets/${id}`)
}

export async function runCreateCase (fz: FuzzApp, contentCase: CreateCase, newPet: DocumentValidatorFn): Promise<void> {
  const verdict = bodyVerdict(contentCase.body.bytes, newPet)
  const sent = createSent(contentCase)
  const received = await send(fz, sent)
  const expectation = expectCreate(contentCase, verdict)
  const why = verdict.status === 201 ? '' : ` (body: ${verdict.why})`
  sent.label += why
  checkResponse(fz, sent, received, expectation)
  if (received.status === 201) {
    const pet = verdict.status === 400 ? undefined : verdict.pet
    assert.ok(pet, `201 for a body whose categoryId cannot be exact:\n${describeSent(sent, received)}`)
    await assertRoundTrip(fz, sent, received, pet)
  }
}

// ---------------------------------------------------------------------------------------
// listPets and getPet: a catalogue the model knows animal by animal

export interface StoredPet { id: number, name: string, categoryId: bigint, status?: string }

export interface Catalogue {
  pets: StoredPet[]
  /** Every cursor the service issued, with the position it stands for. */
  cursors: Map<string, { afterId: number, status: string | undefined }>
  /** ETags of full pages seen, with the query and the ids of the page. */
  etags: Array<{ tag: string, key: string, ids: number[] }>
  limitDefault: number
  limitMax: number
  statuses: string[]
}

// Names the contract keeps exactly as sent, the unusual ones included (a right-to-left mark is allowed; a C1
// control or an override is not: docs/decisions.md, text rules).
export const SEED_NAMES = ['Rex', 'Tom', '   ', 'Zoë', '🐕 Fido', 'a\u00a0b', 'Ünïcödé', 'x'.repeat(200), '名前', '\u200fשלום', '"quoted"', 'back\\slash', '\u2028line', 'e\u0301']
export const SEED_CATEGORIES = [1n, 0n, -1n, 42n, MAX_SAFE + 2n, INT64_MAX, INT64_MIN, 7n]

/** Adds `count` animals through the API and returns them as stored. */
export async function seedCatalogue (fz: FuzzApp, count: number, statuses: string[]): Promise<StoredPet[]> {
  const pets: StoredPet[] = []
  for (let index = 0; index < count; index++) {
    const status = index % (statuses.length + 1) === statuses.length ? undefined : statuses[index % (statuses.length + 1)]
    const name = SEED_NAMES[index % SEED_NAMES.length] ?? 'Rex'
    const categoryId = SEED_CATEGORIES[index % SEED_CATEGORIES.length] ?? 1n
    const sent: Sent = {
      label: 'seed',
      method: 'POST',
      url: '/v1/pets',
      headers: { authorization: `Bearer ${fz.key}`, 'content-type': 'application/json' },
      payload: Buffer.from(`{"name":${JSON.stringify(name)},"categoryId":${categoryId}${status === undefined ? '' : `,"status":"${status}"`}}`)
    }
    const received = await send(fz, sent)
    assert.equal(received.status, 201, describeSent(sent, received))
    pets.push({ id: Number(readPet(received.body).id), name, categoryId, ...(status !== undefined && { status }) })
  }
  return pets
}

export function listParameters (doc: OpenApiDocument): { limitDefault: number, limitMin: number, limitMax: number, statuses: string[] } {
  const parameters = new Map((doc.paths['/pets']?.get?.parameters ?? []).map((parameter) => [parameter.name, deref(doc, parameter.schema)]))
  const limit = parameters.get('limit')
  const status = parameters.get('status')
  assert.ok(limit && status && parameters.has('cursor'), `listPets parameters: ${JSON.stringify([...parameters.keys()])}`)
  return {
    limitDefault: Number(limit.default),
    limitMin: Number(limit.minimum),
    limitMax: Number(limit.maximum),
    statuses: status.enum as string[]
  }
}

/** Walks every filter with several page sizes, following Link headers, to learn the cursors and ETags the service issues. */
export async function harvest (fz: FuzzApp, pets: StoredPet[]): Promise<Catalogue> {
  const { limitDefault, limitMax, statuses } = listParameters(fz.doc)
  const catalogue: Catalogue = { pets, cursors: new Map(), etags: [], limitDefault, limitMax, statuses }
  for (const status of [undefined, ...statuses]) {
    for (const limit of [1, 3, limitDefault]) {
      let url: string | undefined = `/v1/pets?limit=${limit}${status === undefined ? '' : `&status=${status}`}`
      let afterId = 0
      while (url !== undefined) {
        const sent: Sent = { label: 'harvest', method: 'GET', url, headers: { authorization: `Bearer ${fz.key}` } }
        const received = await send(fz, sent)
        assert.equal(received.status, 200, describeSent(sent, received))
        const ids = (JSON.parse(received.body) as Array<{ id: number }>).map((pet) => pet.id)
        if (typeof received.headers.etag === 'string') catalogue.etags.push({ tag: received.headers.etag, key: `${status}:${afterId}:${limit}`, ids })
        const link = typeof received.headers.link === 'string' ? /^<([^>]+)>; rel="next"$/.exec(received.headers.link)?.[1] : undefined
        if (link !== undefined) {
          const cursor = new URL(link, 'http://host').searchParams.get('cursor') ?? ''
          afterId = ids[ids.length - 1] ?? 0
          catalogue.cursors.set(cursor, { afterId, status })
        }
        url = link
      }
    }
  }
  return catalogue
}

/** Query parsing as Fastify does it (fast-querystring): & splits, the first = separates, + is a space, bad escapes stay as written. */
export function parseQuery (query: string): Map<string, string[]> {
  const result = new Map<string, string[]>()
  const decode = (text: string): string => {
    const spaced = text.replace(/\+/g, ' ')
    if (!spaced.includes('%')) return spaced
    try {
      return decodeURIComponent(spaced) || spaced
    } catch {
      return spaced
    }
  }
  for (const piece of query.split('&')) {
    const equals = piece.indexOf('=')
    if (equals === -1 && piece === '') continue
    const key = decode(equals === -1 ? piece : piece.slice(0, equals))
    const value = equals === -1 ? '' : decode(piece.slice(equals + 1))
    result.set(key, [...(result.get(key) ?? []), value])
  }
  return result
}

export interface ListOutcome {
  status: number[]
  why: string
  page?: { afterId: number, status: string | undefined, limit: number }
}

/** docs/decisions.md on GET /pets: each parameter at most once, limit as digits in 1..100, status from the enumeration, cursors only as issued. */
export function expectList (catalogue: Catalogue, query: string): ListOutcome {
  const parsed = parseQuery(query)
  for (const name of ['limit', 'status', 'cursor']) {
    if ((parsed.get(name)?.length ?? 0) > 1) return { status: [400], why: `${name} repeated` }
  }
  const limitText = parsed.get('limit')?.[0]
  const status = parsed.get('status')?.[0]
  const cursor = parsed.get('cursor')?.[0]
  if (limitText !== undefined && !(/^[1-9][0-9]*$/.test(limitText) && Number(limitText) <= catalogue.limitMax)) return { status: [400], why: `limit ${JSON.stringify(limitText)}` }
  if (status !== undefined && !catalogue.statuses.includes(status)) return { status: [400], why: `status ${JSON.stringify(status)}` }
  let afterId = 0
  if (cursor !== undefined) {
    const position = catalogue.cursors.get(cursor)
    if (position === undefined) return { status: [400], why: `cursor ${JSON.stringify(cursor)} was never issued` }
    if (position.status !== status) return { status: [400], why: 'cursor issued for another status' }
    afterId = position.afterId
  }
  return { status: [200], why: 'valid', page: { afterId, status, limit: limitText === undefined ? catalogue.limitDefault : Number(limitText) } }
}

export function expectedPage (catalogue: Catalogue, page: { afterId: number, status: string | undefined, limit: number }): { pets: StoredPet[], more: boolean } {
  const matching = catalogue.pets.filter((pet) => pet.id > page.afterId && (page.status === undefined || pet.status === page.status))
  return { pets: matching.slice(0, page.limit), more: matching.length > page.limit }
}

export function assertPets (text: string, pets: StoredPet[], context: string): void {
  const tree = parseTree(text)
  assert.equal(tree.k, 'arr', context)
  const read = (tree as Extract<JValue, { k: 'arr' }>).items.map((item) => readPet(serialize(item)))
  assert.deepEqual(read.map((pet) => pet.id), pets.map((pet) => String(pet.id)), `ids of the page:\n${context}`)
  for (const [index, pet] of pets.entries()) {
    const got = read[index]
    assert.deepEqual(got && { name: got.name, categoryId: got.categoryId, status: got.status },
      { name: pet.name, categoryId: pet.categoryId.toString(), status: pet.status }, `animal ${pet.id} of the page:\n${context}`)
  }
}

/** Checks a 200 of GET /pets against the model: the page, its Link to the next one, its ETag. */
export function assertListPage (catalogue: Catalogue, page: NonNullable<ListOutcome['page']>, sent: Sent, received: Received): void {
  const context = describeSent(sent, received)
  const expected = expectedPage(catalogue, page)
  if (sent.method !== 'HEAD') assertPets(received.body, expected.pets, context)
  const link = received.headers.link
  if (expected.more) {
    const target = typeof link === 'string' ? /^<([^>]+)>; rel="next"$/.exec(link)?.[1] : undefined
    assert.ok(target, `more animals match but there is no Link rel="next":\n${context}`)
    const url = new URL(target, 'http://host')
    assert.equal(url.pathname, '/v1/pets', context)
    assert.equal(url.searchParams.get('limit'), String(page.limit), `limit of the next link:\n${context}`)
    assert.equal(url.searchParams.get('status') ?? undefined, page.status, `status of the next link:\n${context}`)
    const position = catalogue.cursors.get(url.searchParams.get('cursor') ?? '')
    assert.deepEqual(position, { afterId: expected.pets[expected.pets.length - 1]?.id, status: page.status }, `cursor of the next link:\n${context}`)
  } else {
    assert.equal(link, undefined, `no more animals match but there is a Link:\n${context}`)
  }
  if (expected.pets.length === page.limit) {
    assert.match(String(received.headers.etag), /^"[^"]+"$/, `a full page without a strong ETag:\n${context}`)
  } else {
    assert.equal(received.headers.etag, undefined, `a page that is not full has an ETag:\n${context}`)
  }
}

/** Query strings for GET /pets: the documented parameters, valid and not, repeated, unknown, encoded every way, malformed. */
export function listQueryArbitrary (catalogue: Catalogue, limitMin: number): fc.Arbitrary<{ label: string, query: string }> {
  const cursors = [...catalogue.cursors.keys()]
  const limitValue = fc.oneof(
    { weight: 6, arbitrary: fc.integer({ min: limitMin, max: catalogue.limitMax }).map(String) },
    {
      weight: 3,
      arbitrary: fc.constantFrom(String(limitMin - 1), String(catalogue.limitMax + 1), '0', '-1', '+1', '01', '001', '1.0', '1e1', '0x10', '', ' 1', '1 ', '１', '١',
        '10000000000000000000000', 'NaN', 'Infinity', 'null', 'true', '[1]', '1,2', '20;', String(2 ** 53 + 1))
    },
    { weight: 1, arbitrary: fc.integer().map(String) },
    { weight: 1, arbitrary: wildString }
  )
  const statusValue = fc.oneof(
    { weight: 6, arbitrary: fc.constantFrom(...catalogue.statuses) },
    { weight: 3, arbitrary: fc.constantFrom('', 'Available', 'SOLD', 'available ', ' sold', 'lost', 'available,sold', 'available\u0000', 'pending\u200b', '__proto__', 'constructor') },
    { weight: 1, arbitrary: wildString }
  )
  const tampered = fc.tuple(fc.constantFrom(...cursors), fc.nat(), fc.integer({ min: 1, max: 63 }), fc.constantFrom('replace', 'append', 'delete', 'case', 'dot', 'prefix'))
    .map(([cursor, position, shift, how]) => {
      const alphabet = `${BASE62}-_`
      const at = position % cursor.length
      const char = cursor[at] ?? 'A'
      switch (how) {
        case 'replace': return cursor.slice(0, at) + (alphabet[(alphabet.indexOf(char) + shift) % alphabet.length] ?? 'A') + cursor.slice(at + 1)
        case 'append': return cursor + (alphabet[shift % alphabet.length] ?? 'A')
        case 'delete': return cursor.slice(0, at) + cursor.slice(at + 1)
        case 'case': return cursor.slice(0, at) + (char === char.toUpperCase() ? char.toLowerCase() : char.toUpperCase()) + cursor.slice(at + 1)
        case 'dot': return cursor.slice(0, at) + '.' + cursor.slice(at)
        default: return (alphabet[shift % alphabet.length] ?? 'A') + cursor
      }
    })
  const cursorValue = cursors.length === 0
    ? fc.constantFrom('', 'garbage')
    : fc.oneof(
      { weight: 6, arbitrary: fc.constantFrom(...cursors) },
      { weight: 3, arbitrary: tampered },
      { weight: 1, arbitrary: fc.constantFrom('', 'garbage', '.', '..', 'a.b', 'MQ.AAAAAAAAAAAAAAAAAAAAAA', 'x'.repeat(201), `${cursors[0]}.${cursors[0]}`) },
      { weight: 1, arbitrary: wildString }
    )
  const unknownName = fc.oneof(
    fc.constantFrom('LIMIT', 'Limit', 'limit[]', 'limit ', ' limit', 'status[]', 'STATUS', 'Cursor', 'offset', 'page', 'foo', '', '__proto__', 'constructor', 'prototype', 'toString', 'hasOwnProperty', '__proto__[polluted]', 'constructor[prototype][polluted]'),
    wildString
  )
  const token = (name: fc.Arbitrary<string>, value: fc.Arbitrary<string>, label: string): fc.Arbitrary<{ label: string, text: string }> =>
    fc.tuple(name, value, encodingStyle, encodingStyle, fc.integer({ min: 0, max: 19 })).map(([key, text, keyStyle, valueStyle, form]) => {
      const encodedKey = encodeComponent(key, keyStyle === 'plus' || form < 17 ? 'minimal' : keyStyle)
      const encodedValue = encodeComponent(text, valueStyle)
      return { label, text: form === 19 ? encodedKey : form === 18 ? `${encodedKey}=${encodedValue}=` : `${encodedKey}=${encodedValue}` }
    })
  const anyToken = fc.oneof(
    { weight: 4, arbitrary: token(fc.constant('limit'), limitValue, 'limit') },
    { weight: 4, arbitrary: token(fc.constant('status'), statusValue, 'status') },
    { weight: 3, arbitrary: token(fc.constant('cursor'), cursorValue, 'cursor') },
    { weight: 2, arbitrary: token(unknownName, wildString, 'unknown parameter') },
    {
      weight: 1,
      arbitrary: fc.oneof(
        fc.constantFrom('', '=', '==', '&', 'limit', 'status', 'cursor', 'limit=', 'status=', 'cursor=', '%6Cimit=5', 'lim%69t=0', 'limit=5%26limit%3D6', 'limit=1;limit=2'),
        fc.tuple(fc.constantFrom('limit', 'status', 'cursor', 'foo'), fc.constantFrom(...BAD_ESCAPES)).map(([name, escape]) => `${name}=${escape}`),
        fc.constantFrom(...BAD_ESCAPES).map((escape) => `${escape}=1`)
      ).map((text) => ({ label: 'malformed', text }))
    }
  )
  return fc.tuple(fc.array(anyToken, { maxLength: 5 }), fc.nat(), fc.boolean()).map(([tokens, repeat, duplicate]) => {
    const list = [...tokens]
    const again = list[repeat % Math.max(1, list.length)]
    if (duplicate && again !== undefined) list.splice(repeat % (list.length + 1), 0, again)
    const labels = [...new Set(list.map((item) => item.label))].join('+') || 'no parameters'
    return { label: `${labels}${duplicate && again !== undefined ? ', repeated' : ''}`, query: list.map((item) => item.text).join('&') }
  })
}

/** A petId path segment: existing, unknown, at the int64 edge, spelled oddly, too long, malformed. */
export function petIdArbitrary (ids: number[]): fc.Arbitrary<{ label: string, segment: string }> {
  const maxId = Math.max(0, ...ids)
  const digitsEncoded = (text: string, mask: number): string => [...text].map((char, index) => (mask >> (index % 30)) & 1 ? `%3${char}` : char).join('')
  return fc.oneof(
    { weight: 5, arbitrary: fc.constantFrom(...ids).map((id) => ({ label: 'existing id', segment: String(id) })) },
    { weight: 1, arbitrary: fc.tuple(fc.constantFrom(...ids), fc.nat()).map(([id, mask]) => ({ label: 'existing id, digits percent-encoded', segment: digitsEncoded(String(id), mask) })) },
    { weight: 3, arbitrary: fc.bigInt({ min: BigInt(maxId + 1), max: INT64_MAX }).map((id) => ({ label: 'unknown id', segment: id.toString() })) },
    {
      weight: 3,
      arbitrary: fc.constantFrom('9223372036854775807', '9223372036854775808', '99999999999999999999', String(2 ** 53), String(2 ** 53 + 1), '0', '00', '01', '-1', '+1', '1.0', '1e3', '0x1F', '1_000',
        '%EF%BC%91', '%D9%A1', '%201', '1%20', '%091', '1%00', '1%2F2', '1%3F', '1%23', 'abc', '__proto__', 'constructor', 'toString', 'null', 'NaN', '', ':petId', '{petId}', '*',
        '1;x', '1,2', '1:2', "1'", '1!', '1~', '1(2)', '%2531', '%2e1', `${'1'.repeat(MAX_PARAM_LENGTH)}`, `${'1'.repeat(MAX_PARAM_LENGTH + 1)}`, '%31'.repeat(34))
        .map((segment) => ({ label: 'odd id', segment }))
    },
    { weight: 1, arbitrary: wildString.map((text) => ({ label: 'random text', segment: encodeComponent(text, 'minimal') })).filter(({ segment }) => !/^(?:\.|%2e){1,2}$/i.test(segment)) },
    { weight: 1, arbitrary: fc.tuple(fc.constantFrom(...BAD_ESCAPES), fc.constantFrom('', '1', '12')).map(([escape, digits]) => ({ label: 'malformed escape', segment: `${digits}${escape}` })) }
  )
}

/** What the contract says of a petId segment: 400 unless digits without sign or leading zero up to 2^63−1; then 200 or 404. */
export function expectPetId (segment: string, ids: Set<number>): { status: number, why: string } {
  let decoded: string
  try {
    decoded = decodeURIComponent(segment)
  } catch {
    return { status: 400, why: 'malformed percent-encoding' }
  }
  if (!/^[1-9][0-9]{0,18}$/.test(decoded) || BigInt(decoded) > INT64_MAX) return { status: 400, why: `petId ${JSON.stringify(decoded)}` }
  return ids.has(Number(decoded)) && Number.isSafeInteger(Number(decoded)) ? { status: 200, why: 'existing' } : { status: 404, why: 'unknown' }
}

// ---------------------------------------------------------------------------------------
// Routing: paths and methods from the document, and around it

export const EXTRA_METHODS = ['TRACE', 'PROPFIND', 'PROPPATCH', 'MKCOL', 'COPY', 'MOVE', 'LOCK', 'UNLOCK', 'SEARCH', 'REPORT', 'QUERY', 'PURGE', 'LINK', 'UNLINK', 'MERGE', 'NOTIFY', 'SUBSCRIBE', 'ACL', 'BIND', 'M-SEARCH']
export const PLAIN_METHODS = ['GET', 'HEAD', 'POST', 'PUT', 'PATCH', 'DELETE', 'OPTIONS']

export interface RouteMatch { template: string, petId?: string }

/** Routes a raw path the way the contract reads it: segment by segment, percent-decoded, case-sensitive, no trailing-slash folding. */
export function matchRoute (doc: OpenApiDocument, path: string): RouteMatch | undefined {
  const segments = path.split('/').slice(1).map((segment) => {
    try {
      return decodeURIComponent(segment)
    } catch {
      return segment
    }
  })
  for (const template of Object.keys(doc.paths)) {
    const parts = `/v1${template}`.split('/').slice(1)
    if (parts.length !== segments.length) continue
    let petId: string | undefined
    const matches = parts.every((part, index) => {
      if (/^\{\w+\}$/.test(part)) {
        petId = path.split('/').slice(1)[index]
        return true
      }
      return part === segments[index]
    })
    if (matches) return { template, ...(petId !== undefined && { petId }) }
  }
  return undefined
}

export function isUnderV1 (url: string): boolean {
  return /^\/v1(\/|$|\?)/.test(url)
}

export function allowOf (doc: OpenApiDocument, template: string): string[] {
  const served = Object.keys(doc.paths[template] ?? {}).map((method) => method.toUpperCase())
  return [...new Set([...served, ...(served.includes('GET') ? ['HEAD'] : []), 'OPTIONS'])]
}

/** Paths: documented ones (spelled with percent-encoded letters too), near misses, unknown ones, outside /v1, malformed. */
export function pathArbitrary (doc: OpenApiDocument, ids: number[]): fc.Arbitrary<{ label: string, path: string }> {
  const templates = Object.keys(doc.paths)
  const encodeSomeLetters = (segment: string, mask: number): string => [...segment].map((char, index) => /[a-z]/i.test(char) && (mask >> (index % 30)) & 1 ? `%${char.charCodeAt(0).toString(16)}` : char).join('')
  const documented = fc.tuple(fc.constantFrom(...templates), petIdArbitrary(ids), fc.nat(), fc.boolean()).map(([template, petId, mask, encode]) => {
    const segments = template.split('/').slice(1).map((part) => part === '{petId}' ? petId.segment : encode ? encodeSomeLetters(part, mask) : part)
    return { label: `documented ${template}${template.includes('{') ? ` (${petId.label})` : ''}${encode ? ', letters percent-encoded' : ''}`, path: `/v1/${segments.join('/')}` }
  })
  const segment = fc.oneof(
    fc.constantFrom('pets', 'store', 'orders', 'openapi.json', 'PETS', 'Pets', 'pet', 'v1', 'v2', 'docs', 'categories', 'accounts', 'keys', '__proto__', 'constructor', 'prototype',
      '%2F', '%00', '%25', '%20', ';', ',', '*', ':petId', '{petId}', 'pets;x', 'pets%2F1', 'openapi.json%00', '..x', '.x', '~', "'", '!', '@', '$', '(', ')', '+', '='),
    fc.stringMatching(/^[A-Za-z0-9_~-]{1,12}$/),
    wildString.map((text) => encodeComponent(text, 'minimal')).filter((text) => !/^(?:\.|%2e){1,2}$/i.test(text)),
    fc.integer({ min: MAX_PARAM_LENGTH - 2, max: MAX_PARAM_LENGTH * 3 }).map((length) => 'a'.repeat(length))
  )
  const underV1 = fc.array(segment, { minLength: 0, maxLength: 4 }).map((segments) => ({ label: 'under /v1', path: `/v1/${segments.join('/')}` }))
  const nearMisses = fc.constantFrom('/v1', '/v1/', '/v1/pets/', '/v1/pets//', '/v1//pets', '/v1/pets/1/', '/v1/pets/1/photos', '/v1/store', '/v1/store/', '/v1/store/orders/', '/v1/store/orders/1',
    '/v1/store//orders', '/v1/openapi.json/', '/v1/openapi', '/v1/openapi.yaml', '/v1/pets%2F1', '/v1/pets;x', '/v1/PETS', '/v1/Pets', '/v1/pets%20', '/v1/pets/1/2')
    .map((path) => ({ label: 'near miss', path }))
  const outside = fc.oneof(
    // '/' is not here: it redirects to the reference page /docs.
    fc.constantFrom('/pets', '/pets/1', '/store/orders', '/openapi.json', '/v2/pets', '/V1/pets', '/v1x', '/v1x/pets', '/v10/pets', '/api/v1/pets', '//v1/pets', '/%2Fv1/pets', '/favicon.ico', '/robots.txt', '/health', '/.env', '/__proto__'),
    fc.array(segment, { minLength: 1, maxLength: 3 }).map((segments) => `/${segments.join('/')}`).filter((path) => path !== '/')
  ).map((path) => ({ label: 'outside /v1', path }))
  const malformed = fc.tuple(fc.oneof(documented, underV1, nearMisses), fc.constantFrom(...BAD_ESCAPES), fc.nat()).map(([base, escape, at]) => {
    const position = 1 + (at % base.path.length)
    return { label: `${base.label}, malformed escape`, path: base.path.slice(0, position) + escape + base.path.slice(position) }
  })
  return fc.oneof(
    { weight: 8, arbitrary: documented },
    { weight: 4, arbitrary: underV1 },
    { weight: 2, arbitrary: nearMisses },
    { weight: 2, arbitrary: outside },
    { weight: 2, arbitrary: malformed }
  ).filter(({ path }) => {
    // Not part of the API document: the API reference pages, the probes, the metrics and the developer portal.
    const decoded = path.replace(/%([0-9a-f]{2})/gi, (_all, hex: string) => String.fromCharCode(parseInt(hex, 16)))
    return !/^\/+(docs|healthz|readyz|metrics|portal)/i.test(decoded) && !/(^|\/)(?:\.|%2e){1,2}(\/|$)/i.test(path)
  })
}

// ---------------------------------------------------------------------------------------
// The properties

export async function runProperty<T> (t: TestContext, name: keyof typeof SHARES, arbitrary: fc.Arbitrary<T>, predicate: (value: T) => Promise<void>, numRuns = runsOf(name)): Promise<void> {
  const seed = seedOf(name)
  t.diagnostic(`${name}: ${numRuns} runs, fast-check seed ${seed} (${REPLAY})`)
  const started = Date.now()
  await fc.assert(fc.asyncProperty(arbitrary, predicate), { seed, numRuns, includeErrorInReport: true })
  t.diagnostic(`${name}: passed in ${Date.now() - started} ms`)
}

export function tally (labels: Map<string, number>, label: string): void {
  const key = label.replace(/ \(.*$/, '').replace(/[0-9]+ bytes/, 'N bytes')
  labels.set(key, (labels.get(key) ?? 0) + 1)
}

export function reportTally (t: TestContext, labels: Map<string, number>): void {
  t.diagnostic([...labels.entries()].sort((a, b) => b[1] - a[1]).slice(0, 40).map(([label, count]) => `${count} × ${label}`).join('; '))
}

/** The regressions' Authorization: the test key, as a client sends it. */
export const keyOf = (fz: FuzzApp): AuthCase => ({ label: 'Bearer key', header: `Bearer ${fz.key}`, valid: true, challenge: 'any' })
export const errorMessage = (received: Received): string => (JSON.parse(received.body) as { message: string }).message

/** The last test of each fuzz file: no generated request planted anything on a prototype. */
export function testPrototypesUnchanged (): void {
  test('leaves Object.prototype unchanged after every request the file generated', (t) => {
    t.diagnostic(`${totalRequests} requests sent in all (seed ${SEED})`)
    assertPrototypesUnchanged('the whole run')
    assert.equal(({} as Record<string, unknown>).polluted, undefined)
    assert.equal(Object.hasOwn(Object.prototype, 'polluted'), false)
  })
}
