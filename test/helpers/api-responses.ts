import assert from 'node:assert/strict'
import { request, type OutgoingHttpHeaders } from 'node:http'
import type { FastifyInstance } from 'fastify'

/** The parts of a response the tests look at, from app.inject or from a real socket. */
export interface HttpResponse {
  statusCode: number
  headers: OutgoingHttpHeaders
  body: string
}

export interface ErrorBody {
  code: string
  message: string
  status: number
}

/**
 * docs/decisions.md: every error is application/json with exactly {code, message, status},
 * status equal to the HTTP status. Returns the body for further checks.
 */
export function assertError (response: HttpResponse, status: number, code: string, message: RegExp): ErrorBody {
  const context = `${response.statusCode} ${response.body}`
  assert.equal(response.statusCode, status, context)
  assert.match(String(response.headers['content-type']), /^application\/json(;|$)/, context)
  const body = JSON.parse(response.body) as ErrorBody
  assert.deepEqual(Object.keys(body).sort(), ['code', 'message', 'status'], context)
  assert.equal(typeof body.message, 'string', context)
  assert.deepEqual(body, { code, message: body.message, status }, context)
  assert.match(body.message, message, context)
  return body
}

/** How many animals the catalogue holds (the tests create fewer than 100). */
export async function countPets (app: FastifyInstance, auth: { authorization: string }): Promise<number> {
  const response = await app.inject({ url: '/v1/pets?limit=100', headers: auth })
  assert.equal(response.statusCode, 200, response.body)
  return (response.json<unknown[]>()).length
}

export interface RawRequest {
  method?: string
  path: string
  headers?: OutgoingHttpHeaders
  /**
   * Written with one write() each. Without a content-length header Node sends them
   * chunked (Transfer-Encoding: chunked), so the server cannot know the size in advance.
   */
  chunks?: Buffer[]
}

/**
 * One request over a real socket with node:http, the bytes exactly as given. All chunks
 * are written in the same tick, so they are on the wire before the server answers.
 */
export async function sendRaw (baseUrl: string, raw: RawRequest): Promise<HttpResponse> {
  const url = new URL(raw.path, baseUrl)
  return new Promise((resolve, reject) => {
    let answered = false
    const req = request({
      method: raw.method ?? 'POST',
      host: url.hostname,
      port: url.port,
      path: url.pathname + url.search,
      headers: raw.headers ?? {},
      agent: false
    }, (res) => {
      answered = true
      const received: Buffer[] = []
      res.on('data', (chunk: Buffer) => received.push(chunk))
      res.on('end', () => resolve({ statusCode: res.statusCode ?? 0, headers: res.headers, body: Buffer.concat(received).toString('utf8') }))
      res.on('error', reject)
    })
    // The server may close the connection once it has answered; only an error before the answer counts.
    req.on('error', (error) => { if (!answered) reject(error) })
    for (const chunk of raw.chunks ?? []) req.write(chunk)
    req.end()
  })
}
