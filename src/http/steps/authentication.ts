import type { IncomingMessage } from 'node:http'
import type { Socket } from 'node:net'
import type { FastifyReply, FastifyRequest } from 'fastify'
import { bearerTokenOf } from '../../core/api-keys.js'
import { ApiError } from '../../core/errors.js'
import { hasExpired, type KeyVerifier, type VerifiedKey } from '../../services/key-verifier.js'
import { WWW_AUTHENTICATE, WWW_AUTHENTICATE_EXPIRED, WWW_AUTHENTICATE_INVALID } from '../headers.js'
import type { Step } from '../pipeline.js'

declare module 'fastify' {
  interface FastifyRequest {
    /** The verified key of the request; null for the public document and outside /v1. */
    apiKey: VerifiedKey | null
  }
}

/** The one document under /v1 anyone may read without a key. */
const PUBLIC_PATH = '/v1/openapi.json'
const PUBLIC_METHODS: ReadonlySet<string> = new Set(['GET', 'HEAD', 'OPTIONS'])

function isPublic (request: FastifyRequest): boolean {
  if (!PUBLIC_METHODS.has(request.method)) return false
  const url = request.url
  // A path with escapes (/v1/%6fpenapi.json) routes where its decoded form does: ask the router.
  if (url.includes('%')) return request.routeOptions.url === PUBLIC_PATH
  return url.startsWith(PUBLIC_PATH) && (url.length === PUBLIC_PATH.length || url.charCodeAt(PUBLIC_PATH.length) === 0x3f /* ? */)
}

/** Node keeps only the first of repeated Authorization headers; the raw list shows the others. */
function authorizationCount (raw: IncomingMessage): number {
  let count = 0
  const headers = raw.rawHeaders
  for (let index = 0; index < headers.length; index += 2) {
    const name = headers[index] as string
    if (name.length === 13 && name.toLowerCase() === 'authorization') count++
  }
  return count
}

/** The verified key of an Authorization header; throws the 401 ApiError otherwise. */
export async function authenticate (verifier: KeyVerifier, authorization: string | undefined): Promise<VerifiedKey> {
  const { scheme, token } = bearerTokenOf(authorization)
  if (scheme !== 'bearer') {
    throw new ApiError('unauthorized',
      scheme === 'none' ? 'an API key is required: send Authorization: Bearer <API_KEY>' : 'the Authorization header must use the Bearer scheme',
      { 'www-authenticate': WWW_AUTHENTICATE })
  }
  const key = token === undefined ? undefined : await verifier.verify(token)
  if (key === undefined) {
    throw new ApiError('unauthorized', 'the API key is invalid or has been revoked', { 'www-authenticate': WWW_AUTHENTICATE_INVALID })
  }
  return key
}

/** The 401 of a key presented after its expiry: it says so, with the instant, so that its owner knows to roll it. */
export function expiredKeyError (key: VerifiedKey): ApiError {
  return new ApiError('unauthorized', `the API key expired at ${new Date(key.expiresAt).toISOString()}; create or roll a key in the developer portal`,
    { 'www-authenticate': WWW_AUTHENTICATE_EXPIRED })
}

/** What the step tells others about (the audit trail). */
export interface AuthenticationEvents {
  /** A request from the address presented the key after its expiry. */
  keyExpired: (key: VerifiedKey, address: string) => void
}

/** The key a connection presented on its last request, and the verifier's generation then. */
interface PresentedKey { authorization: string, key: VerifiedKey, generation: number }

/**
 * docs/decisions.md: everything under /v1 except the OpenAPI document is authenticated before anything
 * else, unknown paths and wrong methods included, so a request without a valid key gets 401
 * whatever else is wrong with it. A key verified before costs one SHA-256 and a map lookup;
 * a keep-alive connection that sends the same header again costs a string comparison.
 */
export function authentication (verifier: KeyVerifier, events: AuthenticationEvents): Step {
  /**
   * The header is held no longer than the connection that carries it, and only while no key
   * was forgotten since (a revocation moves the generation). Parsing the header and hashing
   * the key were about a tenth of a cached read.
   */
  const lastKeyOf = new WeakMap<Socket, PresentedKey>()

  function knownKey (request: FastifyRequest, authorization: string | undefined): VerifiedKey | undefined {
    if (authorization === undefined) return undefined
    const generation = verifier.generation
    const socket = request.raw.socket
    const last = lastKeyOf.get(socket)
    if (last !== undefined && last.authorization === authorization && last.generation === generation) {
      verifier.used(last.key)
      return last.key
    }
    const { scheme, token } = bearerTokenOf(authorization)
    const key = scheme === 'bearer' && token !== undefined ? verifier.cached(token) : undefined
    if (key !== undefined) lastKeyOf.set(socket, { authorization, key, generation })
    return key
  }

  function verified (request: FastifyRequest, done: (error?: Error) => void, key: VerifiedKey): void {
    // A remembered key carries its expiry: comparing it with the clock here is what refuses it on every instance at once.
    if (key.expiresAt !== Infinity && hasExpired(key, Date.now())) {
      events.keyExpired(key, request.ip)
      done(expiredKeyError(key))
      return
    }
    request.apiKey = key
    done()
  }

  return {
    name: 'authentication',
    scope: 'api',
    setUp (app) {
      app.decorateRequest('apiKey', null)
    },
    // The pipeline runs it for the API's requests only (scope api).
    onRequest: function authenticateRequest (request: FastifyRequest, _reply: FastifyReply, done: (error?: Error) => void) {
      if (isPublic(request)) {
        done()
        return
      }
      if (authorizationCount(request.raw) > 1) {
        done(ApiError.invalidRequest('send one Authorization header, not several'))
        return
      }
      const authorization = request.headers.authorization
      const known = knownKey(request, authorization)
      if (known !== undefined) {
        verified(request, done, known)
        return
      }
      authenticate(verifier, authorization).then((key) => { verified(request, done, key) }, done)
    }
  }
}
