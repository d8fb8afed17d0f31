import { once } from 'node:events'
import { describe, test, type TestContext } from 'node:test'
import assert from 'node:assert/strict'
import { Validator } from '@seriousme/openapi-schema-validator'
import type { ValidateFunction } from 'ajv/dist/2020.js'
import { generateApiKey, newKeyId } from '../../src/core/api-keys.js'
import { fingerprintOf } from '../../src/core/idempotency.js'
import { MAX_PET_ID } from '../../src/core/pets.js'
import { createApiKey } from '../../src/services/accounts.js'
import { buildTestApp, perSuite, type Scope, type TestApp } from '../helpers/build-app.js'
import { atPointer, deref, documentValidator, HTTP_METHODS, type DocumentValidator, type OpenApiDocument, type Operation, type Schema } from '../helpers/openapi-validator.js'
import { lastPetIdIs } from '../helpers/pet-rows.js'
import { routePaths } from '../helpers/routes.js'
import { openRawConnection, startServer, stoppedListening, type TestServer } from '../helpers/start-server.js'

const json = { 'content-type': 'application/json' }

/** The operations the service serves under /v1, as the document must list them: nothing more, nothing less. */
const EXPECTED_OPERATIONS = ['GET /openapi.json', 'GET /pets', 'GET /pets/{petId}', 'GET /store/orders', 'POST /pets']

async function fetchDocument (t: Scope, env: Record<string, string> = {}): Promise<{ doc: OpenApiDocument, testApp: TestApp }> {
  const testApp = await buildTestApp(t, env)
  const response = await testApp.app.inject({ url: '/v1/openapi.json' })
  assert.equal(response.statusCode, 200, response.body)
  return { doc: response.json<OpenApiDocument>(), testApp }
}

function operationOf (doc: OpenApiDocument, method: string, path: string): Operation {
  const operation = doc.paths[path]?.[method.toLowerCase()]
  assert.ok(operation, `the document has no operation ${method} ${path}; paths: ${JSON.stringify(Object.keys(doc.paths))}`)
  return operation
}

function documentedOperations (doc: OpenApiDocument): string[] {
  return Object.entries(doc.paths).flatMap(([path, item]) =>
    HTTP_METHODS.filter((method) => item[method] !== undefined).map((method) => `${method.toUpperCase()} ${path}`)).sort()
}

function allRefs (node: unknown, found: string[] = []): string[] {
  if (Array.isArray(node)) {
    for (const item of node) allRefs(item, found)
  } else if (typeof node === 'object' && node !== null) {
    for (const [key, value] of Object.entries(node)) {
      if (key === '$ref' && typeof value === 'string') found.push(value)
      else allRefs(value, found)
    }
  }
  return found
}

describe('OpenAPI document', () => {
  describe('happy', () => {
    // The document of the default configuration, read by every test that needs no other; only one test writes (an animal 1).
    const shared = perSuite(async (scope): Promise<{ doc: OpenApiDocument, testApp: TestApp, validator: DocumentValidator }> => {
      const fetched = await fetchDocument(scope)
      return { ...fetched, validator: documentValidator(fetched.doc) }
    })

    test('is served at /v1/openapi.json without an API key, as application/json, OpenAPI 3.1.x, version 1.0.0', async () => {
      const { testApp: { app } } = await shared()
      const response = await app.inject({ url: '/v1/openapi.json' })
      assert.equal(response.statusCode, 200, response.body)
      assert.match(String(response.headers['content-type']), /^application\/json(;|$)/)
      const doc = response.json<OpenApiDocument>()
      assert.match(doc.openapi, /^3\.1\.\d+$/)
      assert.equal(doc.info.version, '1.0.0')
      assert.equal(typeof doc.info.title, 'string')
    })

    test('lists the configured production and staging servers, production first', async (t) => {
      const { doc } = await fetchDocument(t, { PUBLIC_BASE_URL: 'https://api.example.com/v1', STAGING_BASE_URL: 'https://staging.example.com/v1' })
      assert.deepEqual(doc.servers?.map((server) => server.url), ['https://api.example.com/v1', 'https://staging.example.com/v1'], JSON.stringify(doc.servers))
    })

    test('lists the single relative server /v1 without configuration', async () => {
      const { doc } = await shared()
      assert.deepEqual(doc.servers?.map((server) => server.url), ['/v1'], JSON.stringify(doc.servers))
    })

    test('requires the bearerAuth HTTP bearer scheme globally; the document itself needs no key', async () => {
      const { doc } = await shared()
      assert.deepEqual(doc.security, [{ bearerAuth: [] }])
      const scheme = doc.components.securitySchemes?.bearerAuth
      assert.ok(scheme, JSON.stringify(doc.components.securitySchemes))
      assert.equal(scheme.type, 'http')
      assert.equal(scheme.scheme, 'bearer')
      assert.deepEqual(operationOf(doc, 'GET', '/openapi.json').security, [])
      for (const operation of ['GET /pets', 'POST /pets', 'GET /pets/{petId}', 'GET /store/orders']) {
        const [method = '', path = ''] = operation.split(' ')
        assert.equal(operationOf(doc, method, path).security, undefined, `${operation} must inherit the global security`)
      }
    })

    test('names listPets, createPet and getPet under the animals tag, getPet deprecated, none with x-stability', async () => {
      const { doc } = await shared()
      const expected: Array<[string, string, string]> = [['GET', '/pets', 'listPets'], ['POST', '/pets', 'createPet'], ['GET', '/pets/{petId}', 'getPet']]
      for (const [method, path, operationId] of expected) {
        const operation = operationOf(doc, method, path)
        assert.equal(operation.operationId, operationId)
        assert.deepEqual(operation.tags, ['animals'], operationId)
        assert.equal('x-stability' in operation, false, `${operationId} carries x-stability ${String(operation['x-stability'])}`)
        assert.equal(operation.deprecated, operationId === 'getPet' ? true : undefined, `${operationId} deprecated`)
      }
    })

    test('operationIds are unique across the document', async () => {
      const { doc } = await shared()
      const ids = Object.values(doc.paths).flatMap((item) => HTTP_METHODS.map((method) => item[method]?.operationId).filter((id) => id !== undefined))
      assert.equal(ids.length, EXPECTED_OPERATIONS.length, JSON.stringify(ids))
      assert.equal(new Set(ids).size, ids.length, JSON.stringify(ids))
    })

    test('marks GET /store/orders experimental with a documented 501 Error response', async () => {
      const { doc } = await shared()
      const operation = operationOf(doc, 'GET', '/store/orders')
      assert.equal(operation['x-stability'], 'experimental')
      assert.deepEqual(operation.responses['501']?.content?.['application/json']?.schema, { $ref: '#/components/schemas/Error' })
      assert.ok(operation.responses['401'])
    })

    test('documents listPets responses 200, 400, 401 and the optional query parameters limit, status, cursor', async () => {
      const { doc } = await shared()
      const operation = operationOf(doc, 'GET', '/pets')
      for (const status of ['200', '400', '401']) assert.ok(operation.responses[status], `listPets documents ${status}`)
      assert.equal(deref(doc, operation.responses['200']?.content?.['application/json']?.schema).type, 'array')
      const parameters = new Map((operation.parameters ?? []).map((parameter) => [parameter.name, parameter]))
      assert.deepEqual([...parameters.keys()].sort(), ['cursor', 'limit', 'status'])
      for (const parameter of parameters.values()) {
        assert.equal(parameter.in, 'query', parameter.name)
        assert.notEqual(parameter.required, true, `query parameter ${parameter.name} is optional, got ${JSON.stringify(parameter)}`)
      }
      const limit = deref(doc, parameters.get('limit')?.schema)
      assert.equal(limit.type, 'integer')
      assert.equal(limit.minimum, 1)
      assert.equal(limit.maximum, 100)
      assert.equal(limit.default, 20)
      assert.deepEqual(deref(doc, parameters.get('status')?.schema).enum, ['available', 'pending', 'sold'])
      assert.equal(deref(doc, parameters.get('cursor')?.schema).type, 'string')
    })

    test('documents getPet responses 200, 400, 401, 404 and the int64 path parameter petId', async () => {
      const { doc } = await shared()
      const operation = operationOf(doc, 'GET', '/pets/{petId}')
      for (const status of ['200', '400', '401', '404']) assert.ok(operation.responses[status], `getPet documents ${status}`)
      const petId = operation.parameters?.find((parameter) => parameter.name === 'petId')
      assert.ok(petId, JSON.stringify(operation.parameters))
      assert.equal(petId.in, 'path')
      assert.equal(petId.required, true)
      const schema = deref(doc, petId.schema)
      assert.equal(schema.type, 'integer')
      assert.equal(schema.format, 'int64')
    })

    test('documents createPet responses 201, 400, 401, 409, 413, 415, 422, the Idempotency-Key header and a required closed JSON body', async () => {
      const { doc } = await shared()
      const operation = operationOf(doc, 'POST', '/pets')
      for (const status of ['201', '400', '401', '409', '413', '415', '422']) assert.ok(operation.responses[status], `createPet documents ${status}`)
      assert.ok(JSON.stringify(operation).includes('idempotency-key'), 'createPet documents the Idempotency-Key header')
      assert.equal(operation.requestBody?.required, true)
      const body = deref(doc, operation.requestBody?.content['application/json']?.schema)
      assert.equal(body.type, 'object')
      assert.equal(body.additionalProperties, false)
      assert.deepEqual([...(body.required as string[])].sort(), ['categoryId', 'name'])
      assert.deepEqual(Object.keys(body.properties as Schema).sort(), ['categoryId', 'name', 'status'])
      assert.deepEqual(deref(doc, operation.responses['201']?.content?.['application/json']?.schema).required, ['id', 'name', 'categoryId'])
    })

    test('has the component schemas Pet, NewPet, PetStatus and Error', async () => {
      const { doc } = await shared()
      for (const name of ['Pet', 'NewPet', 'PetStatus', 'Error']) assert.ok(doc.components.schemas[name], `components.schemas.${name}`)
      assert.deepEqual(doc.components.schemas.PetStatus?.enum, ['available', 'pending', 'sold'])
    })

    test('Error has exactly the properties code, message and status, all required, and nothing else', async () => {
      const { doc } = await shared()
      const error = deref(doc, doc.components.schemas.Error)
      assert.equal(error.type, 'object')
      assert.deepEqual(Object.keys(error.properties as Schema).sort(), ['code', 'message', 'status'])
      assert.deepEqual([...(error.required as string[])].sort(), ['code', 'message', 'status'])
      assert.equal(error.additionalProperties, false)
    })

    test('every component schema has examples, and each example validates against its schema', async () => {
      const { doc, validator: { validatorAt, errorsText } } = await shared()
      const missing: string[] = []
      for (const [name, schema] of Object.entries(doc.components.schemas)) {
        const examples = schema.examples
        if (!Array.isArray(examples) || examples.length === 0) {
          missing.push(name)
          continue
        }
        const validate = validatorAt('components', 'schemas', name)
        assert.ok(validate, `no schema ${name}`)
        for (const example of examples) assert.ok(validate(example), `example of ${name} ${JSON.stringify(example)}: ${errorsText(validate)}`)
      }
      assert.deepEqual(missing, [], `component schemas without examples: ${missing.join(', ')}`)
    })

    test('every $ref points at something in the document', async () => {
      const { doc } = await shared()
      const refs = allRefs(doc)
      assert.ok(refs.length > 0)
      for (const ref of refs) assert.notEqual(atPointer(doc, ref), undefined, `dangling $ref ${ref}`)
    })

    test('describes every response header with a bounded string schema, shared ones as components', async () => {
      const { doc } = await shared()
      const headers: string[] = []
      for (const [path, item] of Object.entries(doc.paths)) {
        for (const method of HTTP_METHODS) {
          for (const [status, response] of Object.entries(item[method]?.responses ?? {})) {
            for (const [name, described] of Object.entries(response.headers ?? {})) {
              headers.push(name)
              const header = (typeof described.$ref === 'string' ? atPointer(doc, described.$ref) : described) as { description?: string, schema?: Schema } | undefined
              const where = `${method.toUpperCase()} ${path} ${status} header ${name}: ${JSON.stringify(described)}`
              assert.equal(header?.schema?.type, 'string', where)
              assert.ok(['maxLength', 'enum', 'const'].some((bound) => header.schema?.[bound] !== undefined), `${where} is unbounded`)
              assert.ok(header.description, `${where} has no description`)
            }
          }
        }
      }
      for (const name of ['WWW-Authenticate', 'Link', 'Location', 'Retry-After', 'RateLimit', 'RateLimit-Policy']) assert.ok(headers.includes(name), `${name} in ${headers.join(', ')}`)
      assert.deepEqual(Object.keys(doc.components.headers ?? {}).sort(), ['Deprecation', 'RateLimit', 'RateLimit-Policy', 'Retry-After', 'Sunset', 'WWW-Authenticate'])
    })

    test('every keyed operation documents 429 rate_limited with Retry-After and the RateLimit fields, and 503 with Retry-After', async () => {
      const { doc } = await shared()
      for (const operation of ['GET /pets', 'POST /pets', 'GET /pets/{petId}', 'GET /store/orders']) {
        const [method = '', path = ''] = operation.split(' ')
        const { responses } = operationOf(doc, method, path)
        assert.deepEqual(Object.keys(responses['429']?.headers ?? {}).sort(), ['RateLimit', 'RateLimit-Policy', 'Retry-After'].concat(path === '/pets/{petId}' ? ['Deprecation', 'Link', 'Sunset'] : []).sort(), operation)
        assert.ok(responses['503']?.headers?.['Retry-After'], `${operation} 503 names Retry-After`)
        for (const [status, response] of Object.entries(responses)) {
          const counted = status !== '401' && status !== '503'
          assert.equal(response.headers?.RateLimit !== undefined, counted, `${operation} ${status}: RateLimit ${counted ? 'missing' : 'on a response to an uncounted request'}`)
        }
      }
      const publicOne = operationOf(doc, 'GET', '/openapi.json').responses
      assert.deepEqual(Object.keys(publicOne).sort(), ['200', '503'], 'the public document is neither rate limited nor refused for a key')
      assert.deepEqual(Object.keys(publicOne['503']?.content?.['application/json']?.examples as object).sort(), ['overloaded', 'shuttingDown'])
      for (const operation of ['GET /pets', 'POST /pets', 'GET /pets/{petId}']) {
        const [method = '', path = ''] = operation.split(' ')
        const examples = operationOf(doc, method, path).responses['503']?.content?.['application/json']?.examples as object
        assert.deepEqual(Object.keys(examples).sort(), ['databaseUnavailable', 'overloaded', 'shuttingDown'], `${operation}: every cause of 503`)
      }
    })

    test('gives every parameter an example that its schema accepts, but the cursor, which only this server can write', async () => {
      const { doc, validator: { validatorAt, errorsText } } = await shared()
      // The reference page fills each parameter with its example: a cursor signed by some other secret would be refused.
      const withoutExample = new Set(['GET /pets parameter cursor'])
      for (const [path, item] of Object.entries(doc.paths)) {
        for (const method of HTTP_METHODS) {
          for (const [index, parameter] of (item[method]?.parameters ?? []).entries()) {
            const where = `${method.toUpperCase()} ${path} parameter ${parameter.name}`
            assert.equal('example' in parameter, !withoutExample.has(where), `${where}: example ${JSON.stringify((parameter as { example?: unknown }).example)}`)
            if (withoutExample.has(where)) continue
            const validate = validatorAt('paths', path, method, 'parameters', String(index), 'schema')
            assert.ok(validate, where)
            assert.ok(validate((parameter as { example?: unknown }).example), `${where}: ${errorsText(validate)}`)
          }
        }
      }
    })

    test('gives every error response its own examples: each an Error of that status, none repeated under another status', async () => {
      const { doc, validator: { validatorAt, errorsText } } = await shared()
      const validateError = validatorAt('components', 'schemas', 'Error')
      assert.ok(validateError)
      for (const [path, item] of Object.entries(doc.paths)) {
        for (const method of HTTP_METHODS) {
          const seen = new Map<string, string>()
          for (const [status, response] of Object.entries(item[method]?.responses ?? {})) {
            if (Number(status) < 400) continue
            const where = `${method.toUpperCase()} ${path} ${status}`
            const examples = Object.entries((response.content?.['application/json']?.examples ?? {}) as Record<string, { summary?: string, value?: { message?: string, status?: number } }>)
            assert.ok(examples.length > 0, `${where} has no examples`)
            for (const [name, example] of examples) {
              assert.ok(example.summary, `${where} example ${name} has no summary`)
              assert.ok(validateError(example.value), `${where} example ${name}: ${errorsText(validateError)}`)
              assert.equal(example.value?.status, Number(status), `${where} example ${name}`)
              const message = example.value?.message ?? ''
              assert.equal(seen.get(message), undefined, `${where} example ${name} repeats the example of ${seen.get(message) ?? ''}`)
              seen.set(message, status)
            }
          }
        }
      }
    })

    test('refers to NewPet for the create body and has no component that nothing uses', async () => {
      const { doc } = await shared()
      assert.deepEqual(operationOf(doc, 'POST', '/pets').requestBody?.content['application/json']?.schema, { $ref: '#/components/schemas/NewPet' })
      const used = new Set(allRefs({ ...doc, components: undefined }))
      for (const ref of [...used]) for (const inner of allRefs(atPointer(doc, ref))) used.add(inner)
      const unused = Object.entries(doc.components).flatMap(([kind, entries]) => kind === 'securitySchemes'
        ? []
        : Object.keys(entries as object).map((name) => `#/components/${kind}/${name}`).filter((ref) => !used.has(ref)))
      assert.deepEqual(unused, [])
    })

    test('states the int64 bounds digit for digit, a licence and a contact', async () => {
      const { testApp: { app } } = await shared()
      const text = (await app.inject({ url: '/v1/openapi.json' })).body
      assert.ok(text.includes('"minimum":-9223372036854775808'), 'the smallest int64')
      assert.ok(text.includes('"maximum":9223372036854775807'), 'the largest int64')
      assert.equal(text.includes('9223372036854776000'), false, 'no rounded bound')
      const doc = JSON.parse(text) as OpenApiDocument & { info: { license?: { name: string, identifier?: string }, contact?: { name?: string } } }
      assert.deepEqual(doc.info.license, { name: 'MIT', identifier: 'MIT' })
      assert.ok(doc.info.contact?.name)
      assert.equal(deref(doc, doc.components.schemas.Pets).maxItems, 100)
    })

    test('is valid OpenAPI 3.1 (@seriousme/openapi-schema-validator)', async () => {
      const { doc } = await shared()
      const validator = new Validator()
      const result = await validator.validate(structuredClone(doc) as unknown as Record<string, unknown>)
      assert.ok(result.valid, JSON.stringify(result.errors, null, 2))
      assert.equal(validator.version, '3.1')
    })

    test('lists exactly the operations the server serves under /v1', async () => {
      const { doc, testApp: { app, auth } } = await shared()
      assert.deepEqual(documentedOperations(doc), EXPECTED_OPERATIONS)
      const created = await app.inject({ method: 'POST', url: '/v1/pets', headers: { ...auth, ...json }, payload: { name: 'Rex', categoryId: 1 } })
      assert.equal(created.statusCode, 201, created.body)

      // The framework holds no route under /v1: the pipeline answers every request there, from the operations the document is built from.
      const framework = routePaths(app.printRoutes({ commonPrefix: false })).filter((path) => path === '/v1' || path.startsWith('/v1/'))
      assert.deepEqual(framework, [], app.printRoutes({ commonPrefix: false }))

      // On those paths (with an animal 1 that exists), documented methods are served and every other one gets 405 with an Allow of the documented ones.
      for (const path of Object.keys(doc.paths)) {
        const documented = HTTP_METHODS.filter((method) => doc.paths[path]?.[method] !== undefined).map((method) => method.toUpperCase())
        const url = `/v1${path.replace('{petId}', '1')}`
        for (const method of ['GET', 'POST', 'PUT', 'PATCH', 'DELETE'] as const) {
          const response = await app.inject({ method, url, headers: auth })
          if (documented.includes(method)) {
            assert.ok(![404, 405].includes(response.statusCode), `${method} ${url} is documented but answered ${response.statusCode}: ${response.body}`)
          } else {
            assert.equal(response.statusCode, 405, `${method} ${url} is not documented but answered ${response.statusCode}: ${response.body}`)
            const allow = String(response.headers.allow ?? '').split(',').map((name) => name.trim()).filter((name) => !['HEAD', 'OPTIONS'].includes(name))
            assert.deepEqual(allow.sort(), [...documented].sort(), `Allow of ${url}`)
          }
        }
      }
      for (const url of ['/v1', '/v1/', '/v1/store', '/v1/store/orders/1', '/v1/pets/1/photos', '/v1/categories', '/v1/docs']) {
        const response = await app.inject({ url, headers: auth })
        assert.equal(response.statusCode, 404, `GET ${url} is not documented but answered ${response.statusCode}: ${response.body}`)
      }
    })
  })
})

interface Call {
  name: string
  method: 'GET' | 'POST'
  /** The documented path template. */
  path: string
  /** Under /v1, with its query. */
  url: string
  expect: number
  /** Replaces the valid Authorization header; `null` sends none. */
  authorization?: string | null
  headers?: Record<string, string>
  body?: string
}

function calls (): Call[] {
  const valid = JSON.stringify({ name: 'Rex', categoryId: 1, status: 'available' })
  const create = (name: string, body: string, expect: number, headers: Record<string, string> = json): Call =>
    ({ name: `createPet ${name}`, method: 'POST', path: '/pets', url: '/pets', body, headers, expect })
  const list = (query: string, expect: number): Call => ({ name: `listPets ?${query}`, method: 'GET', path: '/pets', url: `/pets?${query}`, expect })
  const get = (id: string, expect: number): Call => ({ name: `getPet ${id}`, method: 'GET', path: '/pets/{petId}', url: `/pets/${id}`, expect })
  const withoutKey = (call: Call, authorization: string | null, label: string): Call =>
    ({ ...call, name: `${call.name} ${label}`, authorization, expect: 401 })
  const operations: Call[] = [
    list('', 200), create('valid', valid, 201), get('1', 200),
    { name: 'listStoreOrders', method: 'GET', path: '/store/orders', url: '/store/orders', expect: 501 }
  ]
  return [
    create('valid with status', valid, 201),
    create('valid without status', JSON.stringify({ name: 'Tom', categoryId: 2 }), 201),
    create('with the largest int64 categoryId', '{"name":"Big","categoryId":9223372036854775807}', 201),
    create('with the smallest int64 categoryId', '{"name":"Small","categoryId":-9223372036854775808,"status":"sold"}', 201),
    create('with a name of spaces', JSON.stringify({ name: '   ', categoryId: 3, status: 'pending' }), 201),
    create('with a name of 200 code points', JSON.stringify({ name: '🐕'.repeat(200), categoryId: 4 }), 201),
    create('with an empty object', '{}', 400),
    create('without categoryId', JSON.stringify({ name: 'Rex' }), 400),
    create('without name', JSON.stringify({ categoryId: 1 }), 400),
    create('with an empty name', JSON.stringify({ name: '', categoryId: 1 }), 400),
    create('with a name of 201 code points', JSON.stringify({ name: 'a'.repeat(201), categoryId: 1 }), 400),
    create('with a control character in name', JSON.stringify({ name: 'a\u0007b', categoryId: 1 }), 400),
    create('with categoryId as a string', JSON.stringify({ name: 'Rex', categoryId: '5' }), 400),
    create('with a fractional categoryId', JSON.stringify({ name: 'Rex', categoryId: 1.5 }), 400),
    create('with categoryId beyond int64', '{"name":"Rex","categoryId":9223372036854775808}', 400),
    create('with an unknown status', JSON.stringify({ name: 'Rex', categoryId: 1, status: 'lost' }), 400),
    create('with null status', JSON.stringify({ name: 'Rex', categoryId: 1, status: null }), 400),
    create('with an id', JSON.stringify({ id: 7, name: 'Rex', categoryId: 1 }), 400),
    create('with an unknown field', JSON.stringify({ name: 'Rex', categoryId: 1, color: 'red' }), 400),
    create('with an array body', '[]', 400),
    create('with a null body', 'null', 400),
    create('with malformed JSON', '{"name":', 400),
    create('with an empty body', '', 400),
    create('with a body over 65,536 bytes', JSON.stringify({ name: 'Rex', categoryId: 1, padding: 'x'.repeat(70_000) }), 413),
    create('with Content-Type text/plain', valid, 415, { 'content-type': 'text/plain' }),
    create('with Content-Encoding gzip', valid, 415, { ...json, 'content-encoding': 'gzip' }),
    create('with an Idempotency-Key', valid, 201, { ...json, 'idempotency-key': 'conformance-1' }),
    create('repeated with the same Idempotency-Key', valid, 201, { ...json, 'idempotency-key': 'conformance-1' }),
    create('with a used Idempotency-Key and another animal', JSON.stringify({ name: 'Other', categoryId: 9 }), 422, { ...json, 'idempotency-key': 'conformance-1' }),
    create('with an invalid Idempotency-Key', valid, 400, { ...json, 'idempotency-key': 'has space' }),
    list('', 200),
    list('status=available', 200),
    list('status=sold&limit=1', 200),
    list('limit=100', 200),
    list('limit=0', 400),
    list('limit=101', 400),
    list('limit=abc', 400),
    list('limit=', 400),
    list('limit=1&limit=2', 400),
    list('status=lost', 400),
    list('cursor=garbage', 400),
    list('cursor=', 400),
    list('unknown=1', 200),
    get('1', 200),
    get('3', 200),
    get('999999', 404),
    get('9223372036854775807', 404),
    get('abc', 400),
    get('0', 400),
    get('-1', 400),
    get('01', 400),
    get('1.5', 400),
    get('9223372036854775808', 400),
    { name: 'listStoreOrders', method: 'GET', path: '/store/orders', url: '/store/orders', expect: 501 },
    { name: 'listStoreOrders with a query', method: 'GET', path: '/store/orders', url: '/store/orders?limit=5', expect: 501 },
    ...operations.map((call) => withoutKey(call, null, 'without a key')),
    ...operations.map((call) => withoutKey(call, 'Bearer ask_not-a-real-key', 'with an unknown key')),
    ...operations.map((call) => withoutKey(call, 'Basic dXNlcjpwYXNz', 'with the Basic scheme')),
    withoutKey(list('limit=0', 400), null, 'without a key (invalid limit too)'),
    withoutKey(get('abc', 400), null, 'without a key (invalid id too)'),
    withoutKey(create('invalid', '{}', 400), 'Bearer ', 'with an empty bearer token'),
    { name: 'getOpenApiDocument without a key', method: 'GET', path: '/openapi.json', url: '/openapi.json', authorization: null, expect: 200 },
    { name: 'getOpenApiDocument with an unknown key', method: 'GET', path: '/openapi.json', url: '/openapi.json', authorization: 'Bearer nope', expect: 200 }
  ]
}

interface Checker {
  doc: OpenApiDocument
  validatorAt: (...segments: string[]) => ValidateFunction | undefined
  errorsText: (validate: ValidateFunction) => string
  /** `METHOD path status` of every response checked so far. */
  seen: Set<string>
  /** The error messages seen under each `METHOD path status`. */
  messages: Map<string, Set<string>>
}

/** Asserts that a live response is documented for its operation and that its body matches the documented schema. */
async function assertConforms (checker: Checker, method: string, path: string, response: Response): Promise<void> {
  const text = await response.text()
  const status = String(response.status)
  const operation = operationOf(checker.doc, method, path)
  const documented = operation.responses[status]
  assert.ok(documented, `${method} ${path} answered ${status}, which is not documented (documented: ${Object.keys(operation.responses).join(', ')}): ${text}`)
  checker.seen.add(`${method} ${path} ${status}`)
  if (response.status === 204 || response.status === 304) {
    assert.equal(text, '', `${status} has no body`)
    return
  }
  assert.match(response.headers.get('content-type') ?? '', /^application\/json(;|$)/, `content-type of ${method} ${path} ${status}: ${text}`)
  assert.ok(documented.content?.['application/json']?.schema, `${method} ${path} ${status} documents no application/json schema`)
  const body: unknown = JSON.parse(text)
  if (response.status >= 400) {
    const key = `${method} ${path} ${status}`
    checker.messages.set(key, (checker.messages.get(key) ?? new Set()).add(String((body as { message?: unknown }).message)))
  }
  const validate = checker.validatorAt('paths', path, method.toLowerCase(), 'responses', status, 'content', 'application/json', 'schema')
  assert.ok(validate, `${method} ${path} ${status} has no schema to validate against`)
  assert.ok(validate(body), `${method} ${path} ${status} body does not match the document: ${checker.errorsText(validate)}: ${text}`)
}

async function send (server: TestServer, call: Call, extraHeaders: Record<string, string> = {}): Promise<Response> {
  const authorization = call.authorization === undefined ? server.auth.authorization : call.authorization
  return await fetch(`${server.baseUrl}/v1${call.url}`, {
    method: call.method,
    headers: { ...(authorization !== null && { authorization }), ...call.headers, ...extraHeaders },
    body: call.body
  })
}

function nextLink (response: Response, baseUrl: string): string | undefined {
  const link = response.headers.get('link')
  if (link === null) return undefined
  const match = /<([^>]+)>;\s*rel="next"/.exec(link)
  assert.ok(match?.[1], `malformed Link header: ${link}`)
  return new URL(match[1], baseUrl).toString()
}

/**
 * Each request, sent on a connection of its own behind a create whose body is still on its way
 * when the server starts to close: the answers the server gives while it drains.
 */
async function answersWhileDraining (t: TestContext, requests: string[]): Promise<Array<{ request: string, response: Response }>> {
  const { app, key, baseUrl } = await startServer(t)
  const body = '{"name":"Rex","categoryId":1}'
  const sockets = await Promise.all(requests.map(async () => await openRawConnection(t, baseUrl)))
  const inFlight = await openRawConnection(t, baseUrl)
  // Each request's header, all but its last line break: the server has begun reading a request on
  // each connection, so shutting down does not close them as idle.
  for (const [index, { socket }] of sockets.entries()) {
    const [method = '', path = ''] = (requests[index] ?? '').split(' ')
    const fields = method === 'POST' ? `\r\nContent-Type: application/json\r\nContent-Length: ${body.length}` : ''
    socket.write(`${method} ${path} HTTP/1.1\r\nHost: test\r\nAuthorization: Bearer ${key}${fields}\r\n`)
  }
  // Written after those, so the server has read them once this request has arrived.
  const arrived = once(app.server, 'request')
  inFlight.socket.write(`POST /v1/pets HTTP/1.1\r\nHost: test\r\nAuthorization: Bearer ${key}\r\nContent-Type: application/json\r\nContent-Length: ${body.length}\r\n\r\n${body.slice(0, 5)}`)
  await arrived
  const closed = app.close()
  await stoppedListening(app.server)
  for (const [index, { socket }] of sockets.entries()) socket.write(`\r\n${requests[index]?.startsWith('POST ') === true ? body : ''}`)
  inFlight.socket.write(body.slice(5))
  await Promise.all([...sockets, inFlight].map(async ({ ended }) => await ended))
  await closed
  assert.match(inFlight.received(), /^HTTP\/1\.1 201 [^]*\r\nconnection: close\r\n/i, 'the request in flight is answered, and its connection closed')
  return sockets.map(({ received }, index) => {
    const [head = '', text = ''] = received().split('\r\n\r\n')
    const [statusLine = '', ...fields] = head.split('\r\n')
    const headers = new Headers(fields.map((field) => [field.slice(0, field.indexOf(':')), field.slice(field.indexOf(':') + 1).trim()] as [string, string]))
    return { request: requests[index] ?? '', response: new Response(text, { status: Number(statusLine.split(' ')[1]), headers }) }
  })
}

describe('responses of the running server', () => {
  describe('happy', () => {
    test('are documented for their operation, application/json, and match the documented schema', async (t) => {
      const server = await startServer(t)
      const docResponse = await fetch(`${server.baseUrl}/v1/openapi.json`)
      assert.equal(docResponse.status, 200)
      const doc = await docResponse.json() as OpenApiDocument
      const checker: Checker = { doc, ...documentValidator(doc), seen: new Set(), messages: new Map() }

      for (const call of calls()) {
        await t.test(`${call.name} answers ${call.expect} as documented`, async () => {
          const response = await send(server, call)
          assert.equal(response.status, call.expect, `${call.method} ${call.url}: ${await response.clone().text()}`)
          await assertConforms(checker, call.method, call.path, response)
        })
      }

      await t.test('createPet answers 409 while a request with the same Idempotency-Key is in flight', async () => {
        const account = await server.store.accounts.findByEmail('test@example.com')
        const [apiKey] = await server.store.apiKeys.listByAccount(account?.id ?? 0)
        await server.store.idempotency.claim({ apiKeyId: apiKey?.id ?? '', key: 'in-flight' }, fingerprintOf({ name: 'Rex', categoryId: 1, status: 'available' }),
          { now: new Date(), expiredBefore: new Date(0), abandonedBefore: new Date(0) })
        const response = await send(server, { name: '', method: 'POST', path: '/pets', url: '/pets', body: JSON.stringify({ name: 'Rex', categoryId: 1, status: 'available' }), headers: { ...json, 'idempotency-key': 'in-flight' }, expect: 409 })
        assert.equal(response.status, 409)
        await assertConforms(checker, 'POST', '/pets', response)
      })

      await t.test('listPets pages followed through Link headers, with and without status', async () => {
        for (const first of ['/pets?limit=1', '/pets?limit=2&status=available', '/pets?limit=1&status=sold']) {
          let url: string | undefined = `${server.baseUrl}/v1${first}`
          let pages = 0
          while (url !== undefined) {
            const response = await fetch(url, { headers: server.auth })
            assert.equal(response.status, 200, url)
            url = nextLink(response, server.baseUrl)
            await assertConforms(checker, 'GET', '/pets', response)
            assert.ok(++pages <= 20, `paging from ${first} does not end`)
          }
          if (first === '/pets?limit=1') assert.ok(pages >= 6, `${first} gave ${pages} pages`)
        }
      })

      await t.test('listPets answers If-None-Match on a full page with 304', async () => {
        const full = await fetch(`${server.baseUrl}/v1/pets?limit=2`, { headers: server.auth })
        const etag = full.headers.get('etag')
        assert.ok(etag, 'a full page carries an ETag')
        await assertConforms(checker, 'GET', '/pets', full)
        const revalidated = await send(server, { name: '', method: 'GET', path: '/pets', url: '/pets?limit=2', expect: 304 }, { 'if-none-match': etag })
        assert.equal(revalidated.status, 304)
        await assertConforms(checker, 'GET', '/pets', revalidated)
      })

      await t.test('every keyed operation answers 429 rate_limited as documented once its key is over the limit', async () => {
        const limited = await startServer(t, { RATE_LIMIT_PER_MINUTE: '1' })
        const first = await fetch(`${limited.baseUrl}/v1/pets`, { headers: limited.auth })
        assert.equal(first.status, 200)
        assert.equal(first.headers.get('ratelimit-policy'), '"per-key";q=1;w=60')
        await assertConforms(checker, 'GET', '/pets', first)
        const keyed: Call[] = [
          { name: '', method: 'GET', path: '/pets', url: '/pets', expect: 429 },
          { name: '', method: 'POST', path: '/pets', url: '/pets', headers: json, body: JSON.stringify({ name: 'Rex', categoryId: 1 }), expect: 429 },
          { name: '', method: 'GET', path: '/pets/{petId}', url: '/pets/1', expect: 429 },
          { name: '', method: 'GET', path: '/store/orders', url: '/store/orders', expect: 429 }
        ]
        for (const call of keyed) {
          const response = await send(limited, call)
          assert.equal(response.status, 429, `${call.method} ${call.url}: ${await response.clone().text()}`)
          for (const header of ['retry-after', 'ratelimit', 'ratelimit-policy']) assert.ok(response.headers.get(header), `${call.method} ${call.url} 429 sends ${header}`)
          await assertConforms(checker, call.method, call.path, response)
        }
      })

      await t.test('every operation answers 503 service_unavailable as documented while the server drains', async () => {
        for (const answer of await answersWhileDraining(t, [
          'GET /v1/pets', 'POST /v1/pets', 'GET /v1/pets/1', 'GET /v1/store/orders', 'GET /v1/openapi.json'
        ])) {
          assert.equal(answer.response.status, 503, `${answer.request}: ${await answer.response.clone().text()}`)
          assert.equal(answer.response.headers.get('retry-after'), '1', answer.request)
          assert.equal(answer.response.headers.get('connection'), 'close', answer.request)
          const [method = '', url = ''] = answer.request.split(' ')
          await assertConforms(checker, method, url.slice('/v1'.length).replace(/\/1$/, '/{petId}'), answer.response)
        }
      })

      await t.test('createPet answers 507 insufficient_storage as documented once every animal id is taken', async () => {
        const full = await startServer(t)
        await lastPetIdIs(full, BigInt(MAX_PET_ID))
        const response = await send(full, { name: '', method: 'POST', path: '/pets', url: '/pets', headers: json, body: JSON.stringify({ name: 'Rex', categoryId: 1 }), expect: 507 })
        assert.equal(response.status, 507, await response.clone().text())
        await assertConforms(checker, 'POST', '/pets', response)
      })

      await t.test("createPet answers 403 sandbox_full as documented once a test key's sandbox is full", async () => {
        const full = await startServer(t, { SANDBOX_MAX_PETS: '20' })
        const { key } = await createApiKey(full.store, { email: 'test@example.com', mode: 'test' })
        const response = await send(full, { name: '', method: 'POST', path: '/pets', url: '/pets', headers: json, body: JSON.stringify({ name: 'Rex', categoryId: 1 }), expect: 403, authorization: `Bearer ${key}` })
        assert.equal(response.status, 403, await response.clone().text())
        await assertConforms(checker, 'POST', '/pets', response)
      })

      await t.test('every scoped operation answers 403 insufficient_scope to a key without its scope, and every operation 401 to an expired key', async () => {
        const account = await server.store.accounts.findByEmail('test@example.com')
        const keyWith = async (terms: { scopes: Array<'animals:read' | 'animals:write'>, expiresAt?: Date }): Promise<string> => {
          const generated = generateApiKey()
          await server.store.apiKeys.create({ id: newKeyId(), accountId: account?.id ?? 0, label: null, prefix: generated.prefix, hash: generated.hash, ...terms }, { maxLive: 100 })
          return `Bearer ${generated.key}`
        }
        const readOnly = await keyWith({ scopes: ['animals:read'] })
        const writeOnly = await keyWith({ scopes: ['animals:write'] })
        const expired = await keyWith({ scopes: ['animals:read', 'animals:write'], expiresAt: new Date(Date.now() - 1000) })
        const body = JSON.stringify({ name: 'Rex', categoryId: 1 })
        const refused: Array<[Call, string]> = [
          [{ name: '', method: 'POST', path: '/pets', url: '/pets', headers: json, body, expect: 403, authorization: readOnly }, 'animals:write'],
          [{ name: '', method: 'GET', path: '/pets', url: '/pets', expect: 403, authorization: writeOnly }, 'animals:read'],
          [{ name: '', method: 'GET', path: '/pets/{petId}', url: '/pets/1', expect: 403, authorization: writeOnly }, 'animals:read']
        ]
        for (const [call, scope] of refused) {
          const response = await send(server, call)
          assert.equal(response.status, 403, `${call.method} ${call.url}: ${await response.clone().text()}`)
          assert.equal(response.headers.get('www-authenticate'), `Bearer realm="animal-store", error="insufficient_scope", scope="${scope}"`)
          await assertConforms(checker, call.method, call.path, response)
        }
        const everyOperation: Call[] = [
          { name: '', method: 'GET', path: '/pets', url: '/pets', expect: 401 },
          { name: '', method: 'POST', path: '/pets', url: '/pets', headers: json, body, expect: 401 },
          { name: '', method: 'GET', path: '/pets/{petId}', url: '/pets/1', expect: 401 },
          { name: '', method: 'GET', path: '/store/orders', url: '/store/orders', expect: 401 }
        ]
        for (const call of everyOperation) {
          const response = await send(server, { ...call, authorization: expired })
          assert.equal(response.status, 401, `${call.method} ${call.url}: ${await response.clone().text()}`)
          assert.match(response.headers.get('www-authenticate') ?? '', /error="invalid_token", error_description="the API key expired"/)
          await assertConforms(checker, call.method, call.path, response)
        }
      })

      await t.test('every documented error example is a message the server sends', async () => {
        // Digits and units vary (an id, seconds left), so they are compared as placeholders.
        const shape = (message: string): string => message.replace(/\d+( (seconds?|minutes?))?/g, '#')
        const unobserved: string[] = []
        for (const [path, item] of Object.entries(doc.paths)) {
          for (const method of HTTP_METHODS) {
            for (const [status, response] of Object.entries(item[method]?.responses ?? {})) {
              const sent = new Set([...(checker.messages.get(`${method.toUpperCase()} ${path} ${status}`) ?? [])].map(shape))
              for (const [name, example] of Object.entries((response.content?.['application/json']?.examples ?? {}) as Record<string, { value: { message: string } }>)) {
                if (!sent.has(shape(example.value.message))) unobserved.push(`${method.toUpperCase()} ${path} ${status} ${name}`)
              }
            }
          }
        }
        // Shedding and an unreachable database are brought about in protection.test.ts and postgres-outage.test.ts.
        const elsewhere = /^(GET|POST) \S+ 503 (overloaded|databaseUnavailable)$/
        assert.deepEqual(unobserved.filter((entry) => !elsewhere.test(entry)), [])
      })

      await t.test('every documented response of every operation was observed', async () => {
        const documented = Object.entries(doc.paths).flatMap(([path, item]) => HTTP_METHODS.flatMap((method) =>
          Object.keys(item[method]?.responses ?? {}).map((status) => `${method.toUpperCase()} ${path} ${status}`)))
        assert.deepEqual(documented.filter((entry) => !checker.seen.has(entry)), [])
      })
    })
  })
})
