import { describe, test } from 'node:test'
import assert from 'node:assert/strict'
import { gzipSync, deflateSync, brotliCompressSync } from 'node:zlib'
import { buildTestApp, perSuite, type TestApp } from '../helpers/build-app.js'
import { startServer } from '../helpers/start-server.js'
import { assertError, countPets, sendRaw } from '../helpers/api-responses.js'

interface Pet { id: number, name: string, categoryId: number, status?: string }

const MAX_BODY_BYTES = 65_536
const JSON_TYPE = { 'content-type': 'application/json' }

async function post (t: TestApp, payload: string | Buffer, headers: Record<string, string> = JSON_TYPE) {
  return t.app.inject({ method: 'POST', url: '/v1/pets', headers: { ...t.auth, ...headers }, payload })
}

/** JSON text padded with trailing whitespace (still valid JSON) to exactly `bytes` bytes. */
function padTo (json: string, bytes: number): string {
  const padding = bytes - Buffer.byteLength(json)
  assert.ok(padding >= 0, 'the JSON is already longer than the padded size')
  return json + ' '.repeat(padding)
}

/** Splits a body into pieces of 4 KiB, to be sent chunked. */
function chunksOf (text: string): Buffer[] {
  const bytes = Buffer.from(text)
  const chunks: Buffer[] = []
  for (let offset = 0; offset < bytes.length; offset += 4096) chunks.push(bytes.subarray(offset, offset + 4096))
  return chunks
}

/** The raw JSON text holds this categoryId literal digit for digit, followed by a delimiter. */
function assertExactCategoryId (raw: string, literal: string): void {
  assert.match(raw, new RegExp(`"categoryId":${literal}[,}]`), raw)
}

describe('createPet', () => {
  describe('happy', () => {
    // Each test looks only at the animals it created (those that look at the whole catalogue have one of their own).
    const shared = perSuite(async (scope) => await startServer(scope))

    test('returns 201 with the animal sent plus its id, and Location: /v1/pets/{id}', async (t) => {
      const testApp = await buildTestApp(t)
      const first = await post(testApp, JSON.stringify({ name: 'Rex', categoryId: 1, status: 'available' }))
      assert.equal(first.statusCode, 201, first.body)
      assert.match(String(first.headers['content-type']), /^application\/json/)
      assert.deepEqual(first.json(), { id: 1, name: 'Rex', categoryId: 1, status: 'available' }, first.body)
      assert.equal(first.headers.location, '/v1/pets/1')

      const second = await post(testApp, JSON.stringify({ name: 'Tom', categoryId: 2, status: 'sold' }))
      assert.equal(second.statusCode, 201, second.body)
      assert.deepEqual(second.json(), { id: 2, name: 'Tom', categoryId: 2, status: 'sold' }, second.body)
      assert.equal(second.headers.location, '/v1/pets/2')

      const fetched = await testApp.app.inject({ url: String(second.headers.location), headers: testApp.auth })
      assert.equal(fetched.statusCode, 200, fetched.body)
      assert.deepEqual(fetched.json(), second.json(), fetched.body)
    })

    test('accepts every status of the enumeration', async () => {
      const testApp = await shared()
      for (const status of ['available', 'pending', 'sold']) {
        const response = await post(testApp, JSON.stringify({ name: 'Rex', categoryId: 1, status }))
        assert.equal(response.statusCode, 201, response.body)
        assert.equal(response.json<Pet>().status, status, response.body)
      }
    })

    test('omits status from every response when it was not sent, never null', async (t) => {
      const testApp = await buildTestApp(t)
      const created = await post(testApp, JSON.stringify({ name: 'Rex', categoryId: 3 }))
      assert.equal(created.statusCode, 201, created.body)
      assert.deepEqual(Object.keys(created.json()).sort(), ['categoryId', 'id', 'name'], created.body)
      assert.doesNotMatch(created.body, /status/)

      const fetched = await testApp.app.inject({ url: '/v1/pets/1', headers: testApp.auth })
      assert.equal(fetched.statusCode, 200, fetched.body)
      assert.deepEqual(fetched.json(), { id: 1, name: 'Rex', categoryId: 3 }, fetched.body)
      assert.doesNotMatch(fetched.body, /status/)

      const listed = await testApp.app.inject({ url: '/v1/pets', headers: testApp.auth })
      assert.deepEqual(listed.json(), [{ id: 1, name: 'Rex', categoryId: 3 }], listed.body)
      assert.doesNotMatch(listed.body, /status/)
    })

    const keptNames: Array<[string, string]> = [
      ['leading and trailing spaces', '  Rex  '],
      ['only spaces', '   '],
      ['a trailing no-break space', 'Rex\u00a0'],
      ['emoji', '🐶 Rex 🐱'],
      ['a decomposed diaeresis (not normalised to NFC)', 'Zoe\u0308'],
      ['an ohm sign (not normalised to omega)', '\u2126'],
      ['a single character', 'x'],
      ['200 ASCII characters', 'a'.repeat(200)],
      ['200 astral emoji, 400 UTF-16 code units', '🐶'.repeat(200)],
      ['right-to-left text with its bidirectional marks U+200F, U+200E and U+061C', '\u05e8\u05e7\u05e1 2\u200f \u200eRex \u0628\u061c']
    ]
    for (const [label, name] of keptNames) {
      test(`keeps a name with ${label} exactly as sent`, async () => {
        const testApp = await shared()
        const created = await post(testApp, JSON.stringify({ name, categoryId: 1 }))
        assert.equal(created.statusCode, 201, created.body)
        assert.equal(created.json<Pet>().name, name, created.body)
        const fetched = await testApp.app.inject({ url: `/v1/pets/${created.json<Pet>().id}`, headers: testApp.auth })
        assert.equal(fetched.json<Pet>().name, name, fetched.body)
      })
    }

    test('accepts an astral character written as an escaped surrogate pair', async () => {
      const testApp = await shared()
      const created = await post(testApp, '{"name":"\\ud83d\\udc36","categoryId":1}')
      assert.equal(created.statusCode, 201, created.body)
      assert.equal(created.json<Pet>().name, '🐶', created.body)
    })

    test('accepts categoryId 0 and negative categoryIds', async () => {
      const testApp = await shared()
      for (const categoryId of [0, -1, -9007199254740991]) {
        const created = await post(testApp, JSON.stringify({ name: 'Rex', categoryId }))
        assert.equal(created.statusCode, 201, created.body)
        assert.equal(created.json<Pet>().categoryId, categoryId, created.body)
      }
    })

    for (const literal of ['9007199254740993', '9223372036854775807', '-9223372036854775808']) {
      test(`returns categoryId ${literal} exactly in createPet, getPet and listPets`, async () => {
        const testApp = await shared()
        const created = await post(testApp, `{"name":"big","categoryId":${literal}}`)
        assert.equal(created.statusCode, 201, created.body)
        assertExactCategoryId(created.body, literal)
        const { id } = JSON.parse(created.body) as Pet

        const fetched = await testApp.app.inject({ url: `/v1/pets/${id}`, headers: testApp.auth })
        assert.equal(fetched.statusCode, 200, fetched.body)
        assertExactCategoryId(fetched.body, literal)

        // The whole catalogue on one page (the tests create fewer than 100 animals), this animal found by its id.
        const listed = await testApp.app.inject({ url: '/v1/pets?limit=100', headers: testApp.auth })
        assert.equal(listed.statusCode, 200, listed.body)
        assert.match(listed.body, new RegExp(`\\{"id":${id},"name":"big","categoryId":${literal}[,}]`), listed.body)
      })
    }

    for (const contentType of ['application/json', 'application/json; charset=utf-8', 'APPLICATION/JSON', 'application/json;charset=UTF-8', 'application/json; charset="utf-8"']) {
      test(`accepts Content-Type: ${contentType}`, async () => {
        const testApp = await shared()
        const response = await post(testApp, JSON.stringify({ name: 'Rex', categoryId: 1 }), { 'content-type': contentType })
        assert.equal(response.statusCode, 201, response.body)
      })
    }

    test('accepts Content-Encoding: identity', async () => {
      const testApp = await shared()
      const response = await post(testApp, JSON.stringify({ name: 'Rex', categoryId: 1 }), { ...JSON_TYPE, 'content-encoding': 'identity' })
      assert.equal(response.statusCode, 201, response.body)
    })

    test('accepts a valid body of exactly 65,536 bytes, with Content-Length and chunked', async () => {
      const server = await shared()
      const before = await countPets(server.app, server.auth)
      const body = padTo(JSON.stringify({ name: 'Rex', categoryId: 1 }), MAX_BODY_BYTES)
      const declared = await post(server, body)
      assert.equal(declared.statusCode, 201, declared.body)
      const chunked = await sendRaw(server.baseUrl, {
        path: '/v1/pets',
        headers: { ...server.auth, ...JSON_TYPE, 'transfer-encoding': 'chunked' },
        chunks: chunksOf(body)
      })
      assert.equal(chunked.statusCode, 201, chunked.body)
      assert.equal(await countPets(server.app, server.auth), before + 2)
    })

    test('accepts a categoryId written with a zero fraction or an exponent and keeps its exact value', async () => {
      const testApp = await shared()
      for (const [literal, exact] of [['9007199254740993.0', '9007199254740993'], ['1e3', '1000'], ['100e-2', '1']]) {
        const response = await post(testApp, `{"name":"Rex","categoryId":${literal}}`)
        assert.equal(response.statusCode, 201, response.body)
        assert.match(response.body, new RegExp(`"categoryId":${exact}[,}]`))
      }
    })
  })

  describe('error', () => {
    // Every test here creates nothing (each checks it), so they share one server and its empty catalogue.
    const shared = perSuite(async (scope) => await startServer(scope))

    const invalidNames: Array<[string, string, RegExp]> = [
      ['name is empty', '{"name":"","categoryId":1}', /^name must be at least 1 character long$/],
      ['name has 201 ASCII characters', JSON.stringify({ name: 'a'.repeat(201), categoryId: 1 }), /^name must be at most 200 characters long$/],
      ['name has 201 astral emoji', JSON.stringify({ name: '🐶'.repeat(201), categoryId: 1 }), /^name must be at most 200 characters long$/],
      ['name is a lone high surrogate', '{"name":"\\ud800","categoryId":1}', /^name must not contain control characters/],
      ['name is a lone low surrogate', '{"name":"\\udfff","categoryId":1}', /^name must not contain control characters/],
      ['name holds a lone surrogate between letters', '{"name":"a\\udc00b","categoryId":1}', /^name must not contain/],
      ['name holds a reversed surrogate pair', '{"name":"\\udc36\\ud83d","categoryId":1}', /^name must not contain/],
      ['name is a number', '{"name":5,"categoryId":1}', /^name must be a string$/],
      ['name is null', '{"name":null,"categoryId":1}', /^name must be a string$/],
      ['name is missing', '{"categoryId":1}', /^name is required$/]
    ]
    for (const [label, payload, message] of invalidNames) {
      test(`returns 400 invalid_request naming name when ${label}`, async () => {
        const testApp = await shared()
        assertError(await post(testApp, payload), 400, 'invalid_request', message)
        assert.equal(await countPets(testApp.app, testApp.auth), 0)
      })
    }

    test('returns 400 invalid_request naming name for each control character U+0000-U+001F and U+007F', async () => {
      const testApp = await shared()
      const codePoints = [...Array.from({ length: 0x20 }, (_, i) => i), 0x7f]
      for (const codePoint of codePoints) {
        for (const name of [`a${String.fromCodePoint(codePoint)}b`, String.fromCodePoint(codePoint)]) {
          const response = await post(testApp, JSON.stringify({ name, categoryId: 1 }))
          assertError(response, 400, 'invalid_request', /^name must not contain control characters/)
        }
      }
      assert.equal(await countPets(testApp.app, testApp.auth), 0)
    })

    test('returns 400 invalid_request naming name for each C1 control U+0080-U+009F and each bidirectional override, embedding and isolate', async () => {
      const testApp = await shared()
      const codePoints = [...Array.from({ length: 0x20 }, (_, i) => 0x80 + i), 0x202a, 0x202b, 0x202c, 0x202d, 0x202e, 0x2066, 0x2067, 0x2068, 0x2069]
      for (const codePoint of codePoints) {
        for (const name of [`a${String.fromCodePoint(codePoint)}b`, String.fromCodePoint(codePoint)]) {
          const response = await post(testApp, JSON.stringify({ name, categoryId: 1 }))
          assertError(response, 400, 'invalid_request', /^name must not contain control characters \(U\+0000 to U\+001F, U\+007F to U\+009F\) or bidirectional overrides, embeddings and isolates/)
        }
      }
      assert.equal(await countPets(testApp.app, testApp.auth), 0)
    })

    const invalidCategoryIds: Array<[string, RegExp]> = [
      ['"5"', /^categoryId must be an integer$/],
      ['"9007199254740993"', /^categoryId must be an integer$/],
      ['1.5', /^categoryId must be an integer/],
      ['1.0000000000000001', /^categoryId must be an integer/],
      ['0.99999999999999999', /^categoryId must be an integer/],
      ['1e-400', /^categoryId must be an integer/],
      ['true', /^categoryId must be an integer$/],
      ['null', /^categoryId must be an integer$/],
      ['{}', /^categoryId must be an integer$/],
      ['[1]', /^categoryId must be an integer$/],
      ['9223372036854775808', /^categoryId must be an integer between -9223372036854775808 and 9223372036854775807/],
      ['-9223372036854775809', /^categoryId must be an integer between -9223372036854775808 and 9223372036854775807/],
      ['99999999999999999999999', /^categoryId must be an integer between/],
      ['1e30', /^categoryId must be an integer between/],
      ['1E400', /^categoryId must be an integer/]
    ]
    for (const [literal, message] of invalidCategoryIds) {
      test(`returns 400 invalid_request naming categoryId when categoryId is ${literal}`, async () => {
        const testApp = await shared()
        assertError(await post(testApp, `{"name":"Rex","categoryId":${literal}}`), 400, 'invalid_request', message)
        assert.equal(await countPets(testApp.app, testApp.auth), 0)
      })
    }

    test('returns 400 invalid_request naming categoryId when categoryId is missing', async () => {
      const testApp = await shared()
      assertError(await post(testApp, '{"name":"Rex"}'), 400, 'invalid_request', /^categoryId is required$/)
      assert.equal(await countPets(testApp.app, testApp.auth), 0)
    })

    test('returns 400 invalid_request, not 500, when categoryId is given twice and one value lies beyond 2^53', async () => {
      const testApp = await shared()
      for (const payload of ['{"name":"Rex","categoryId":1,"categoryId":9007199254740993}', '{"name":"Rex","categoryId":9007199254740993,"categoryId":9007199254740995}']) {
        assertError(await post(testApp, payload), 400, 'invalid_request', /categoryId/)
      }
      assert.equal(await countPets(testApp.app, testApp.auth), 0)
    })

    test('returns 400 invalid_request, not 500, for a deeply nested unknown field beside a categoryId beyond 2^53', async () => {
      const testApp = await shared()
      const depth = 32_000
      const payload = `{"name":"Rex","categoryId":9007199254740993,"x":${'['.repeat(depth)}${']'.repeat(depth)}}`
      assert.ok(Buffer.byteLength(payload) <= MAX_BODY_BYTES)
      assertError(await post(testApp, payload), 400, 'invalid_request', /./)
      assert.equal(await countPets(testApp.app, testApp.auth), 0)
    })

    const unknownFields: Array<[string, string, RegExp]> = [
      ['id', '{"id":7,"name":"Rex","categoryId":1}', /^unknown field "id"/],
      ['foo', '{"name":"Rex","categoryId":1,"foo":"bar"}', /^unknown field "foo"/],
      ['__proto__', '{"name":"Rex","categoryId":1,"__proto__":{"status":"sold"}}', /__proto__/],
      ['constructor', '{"name":"Rex","categoryId":1,"constructor":1}', /^unknown field "constructor"/],
      ['constructor holding prototype', '{"name":"Rex","categoryId":1,"constructor":{"prototype":{}}}', /constructor/]
    ]
    for (const [field, payload, message] of unknownFields) {
      test(`returns 400 invalid_request naming the field for unknown field ${field}`, async () => {
        const testApp = await shared()
        assertError(await post(testApp, payload), 400, 'invalid_request', message)
        assert.equal(await countPets(testApp.app, testApp.auth), 0)
      })
    }

    for (const status of ['"lost"', '"SOLD"', '""', 'null', '1']) {
      test(`returns 400 invalid_request naming status when status is ${status}`, async () => {
        const testApp = await shared()
        const response = await post(testApp, `{"name":"Rex","categoryId":1,"status":${status}}`)
        assertError(response, 400, 'invalid_request', /^status must be (one of available, pending, sold|a string)$/)
        assert.equal(await countPets(testApp.app, testApp.auth), 0)
      })
    }

    for (const payload of ['[]', '[{"name":"Rex","categoryId":1}]', '"Rex"', '42', 'null', 'true']) {
      test(`returns 400 invalid_request when the body is ${payload}, not an object`, async () => {
        const testApp = await shared()
        assertError(await post(testApp, payload), 400, 'invalid_request', /^the request body must be a JSON object$/)
        assert.equal(await countPets(testApp.app, testApp.auth), 0)
      })
    }

    for (const payload of ['{', '{"name":"Rex","categoryId":1,}', "{'name':'Rex','categoryId':1}", '{name:"Rex",categoryId:1}', '{"name":"Rex","categoryId":1} x']) {
      test(`returns 400 invalid_request for malformed JSON ${JSON.stringify(payload)}`, async () => {
        const testApp = await shared()
        assertError(await post(testApp, payload), 400, 'invalid_request', /^the request body is not valid JSON/)
        assert.equal(await countPets(testApp.app, testApp.auth), 0)
      })
    }

    test('returns 400 invalid_request for an empty body sent as application/json', async () => {
      const testApp = await shared()
      assertError(await post(testApp, ''), 400, 'invalid_request', /^the request body is empty/)
      assert.equal(await countPets(testApp.app, testApp.auth), 0)
    })

    test('returns 400 invalid_request, not 415, for a POST with no body and no Content-Type (found by the fuzzer)', async () => {
      const testApp = await shared()
      const response = await testApp.app.inject({ method: 'POST', url: '/v1/pets', headers: testApp.auth })
      assertError(response, 400, 'invalid_request', /^the request body must be a JSON object$/)
      assert.equal(await countPets(testApp.app, testApp.auth), 0)
    })

    test('returns 400 invalid_request for a body that is not valid UTF-8', async () => {
      const server = await shared()
      const invalid = [
        Buffer.from([0x7b, 0x22, 0x6e, 0x61, 0x6d, 0x65, 0x22, 0x3a, 0x22, 0xff, 0x22, ...Buffer.from(',"categoryId":1}')]),
        Buffer.concat([Buffer.from('{"name":"'), Buffer.from([0xc0, 0xaf]), Buffer.from('","categoryId":1}')]),
        Buffer.concat([Buffer.from('{"name":"'), Buffer.from([0xed, 0xa0, 0x80]), Buffer.from('","categoryId":1}')]),
        Buffer.concat([Buffer.from('{"name":"'), Buffer.from([0xe2, 0x82]), Buffer.from('","categoryId":1}')])
      ]
      for (const bytes of invalid) {
        const response = await sendRaw(server.baseUrl, {
          path: '/v1/pets',
          headers: { ...server.auth, ...JSON_TYPE, 'content-length': String(bytes.length) },
          chunks: [bytes]
        })
        assertError(response, 400, 'invalid_request', /^the request body is not valid UTF-8$/)
      }
      assert.equal(await countPets(server.app, server.auth), 0)
    })

    const unsupportedTypes: Array<[string, Record<string, string>, string]> = [
      ['text/plain', { 'content-type': 'text/plain' }, '{"name":"Rex","categoryId":1}'],
      ['application/x-www-form-urlencoded', { 'content-type': 'application/x-www-form-urlencoded' }, 'name=Rex&categoryId=1'],
      ['multipart/form-data', { 'content-type': 'multipart/form-data; boundary=x' }, '--x\r\n\r\nRex\r\n--x--'],
      ['no Content-Type', {}, '{"name":"Rex","categoryId":1}'],
      ['application/json-patch+json', { 'content-type': 'application/json-patch+json' }, '{"name":"Rex","categoryId":1}'],
      ['application/json; charset=latin1', { 'content-type': 'application/json; charset=latin1' }, '{"name":"Rex","categoryId":1}'],
      ['application/json; charset=utf-16', { 'content-type': 'application/json; charset=utf-16' }, '{"name":"Rex","categoryId":1}']
    ]
    for (const [label, headers, payload] of unsupportedTypes) {
      test(`returns 415 unsupported_media_type naming Content-Type for ${label}`, async () => {
        const testApp = await shared()
        assertError(await post(testApp, payload, headers), 415, 'unsupported_media_type', /Content-Type|charset/)
        assert.equal(await countPets(testApp.app, testApp.auth), 0)
      })
    }

    const encoded: Array<[string, Buffer]> = [
      ['gzip', gzipSync('{"name":"Rex","categoryId":1}')],
      ['deflate', deflateSync('{"name":"Rex","categoryId":1}')],
      ['br', brotliCompressSync('{"name":"Rex","categoryId":1}')],
      ['identity, gzip', gzipSync('{"name":"Rex","categoryId":1}')]
    ]
    for (const [encoding, payload] of encoded) {
      test(`returns 415 unsupported_media_type naming Content-Encoding for ${encoding}`, async () => {
        const testApp = await shared()
        const response = await post(testApp, payload, { ...JSON_TYPE, 'content-encoding': encoding })
        assertError(response, 415, 'unsupported_media_type', /^Content-Encoding .* is not supported/)
        assert.equal(await countPets(testApp.app, testApp.auth), 0)
      })
    }

    test('returns 413 payload_too_large for a body of 65,537 bytes with Content-Length', async () => {
      const testApp = await shared()
      const body = padTo(JSON.stringify({ name: 'Rex', categoryId: 1 }), MAX_BODY_BYTES + 1)
      assertError(await post(testApp, body), 413, 'payload_too_large', /^the request body is larger than 65536 bytes$/)
      assert.equal(await countPets(testApp.app, testApp.auth), 0)
    })

    for (const size of [MAX_BODY_BYTES + 1, 70_000]) {
      test(`returns 413 payload_too_large for a chunked body of ${size} bytes without Content-Length`, async () => {
        const server = await shared()
        const response = await sendRaw(server.baseUrl, {
          path: '/v1/pets',
          headers: { ...server.auth, ...JSON_TYPE, 'transfer-encoding': 'chunked' },
          chunks: chunksOf(padTo(JSON.stringify({ name: 'Rex', categoryId: 1 }), size))
        })
        assertError(response, 413, 'payload_too_large', /^the request body is larger than 65536 bytes$/)
        assert.equal(await countPets(server.app, server.auth), 0)
      })
    }

    test('returns 400, not 413, for an invalid body of exactly 65,536 bytes, with Content-Length and chunked', async () => {
      const server = await shared()
      const body = padTo(JSON.stringify({ name: 'a'.repeat(300), categoryId: 1 }), MAX_BODY_BYTES)
      assertError(await post(server, body), 400, 'invalid_request', /^name must be at most 200 characters long$/)
      const chunked = await sendRaw(server.baseUrl, {
        path: '/v1/pets',
        headers: { ...server.auth, ...JSON_TYPE, 'transfer-encoding': 'chunked' },
        chunks: chunksOf(body)
      })
      assertError(chunked, 400, 'invalid_request', /^name must be at most 200 characters long$/)
      assert.equal(await countPets(server.app, server.auth), 0)
    })
  })
})
