import type { IncomingMessage } from 'node:http'
import type { Socket } from 'node:net'
import { bearerTokenOf } from '../../core/api-keys.js'
import { ApiError, errors } from '../../core/errors.js'
import { hasExpired, type KeyVerifier, type VerifiedKey } from '../../services/key-verifier.js'
import { errorAnswer, type Answer, type Exchange } from '../exchange.js'
import { headerCount, WWW_AUTHENTICATE, WWW_AUTHENTICATE_EXPIRED, WWW_AUTHENTICATE_INVALID } from '../headers.js'
import type { Step } from '../pipeline.js'
import { OPENAPI_DOCUMENT_PATH } from '../routes/openapi-document.js'

const PUBLIC_METHODS: ReadonlySet<string> = new Set(['GET', 'HEAD', 'OPTIONS'])

/** Whether the request reads the one document under /v1 anyone may read without a key. */
function isPublic (exchange: Exchange): boolean {
  if (!PUBLIC_METHODS.has(exchange.method)) return false
  const path = exchange.path
  if (path === OPENAPI_DOCUMENT_PATH) return true
  // A path with escapes (/v1/%6fpenapi.json) routes where its decoded form does; an escaped slash routes nowhere.
  if (!path.includes('%') || /%2f/i.test(path)) return false
  try {
    return decodeURIComponent(path) === OPENAPI_DOCUMENT_PATH
  } catch {
    return false
  }
}

/** The verified key of an Authorization header; throws the 401 ApiError otherwise. */
async function authenticate (verifier: KeyVerifier, authorization: string | undefined): Promise<VerifiedKey> {
  const { scheme, token } = bearerTokenOf(authorization)
  if (scheme !== 'bearer') {
    throw scheme === 'none' ? errors.keyRequired(WWW_AUTHENTICATE) : errors.notBearer(WWW_AUTHENTICATE)
  }
  const key = token === undefined ? undefined : await verifier.verify(token)
  if (key === undefined) {
    throw errors.invalidKey(WWW_AUTHENTICATE_INVALID)
  }
  return key
}

/** The 401 of a key presented after its expiry: it says so, with the instant, so that its owner knows to roll it. */
function expiredKeyError (key: VerifiedKey): ApiError {
  return errors.expiredKey(key.expiresAt, WWW_AUTHENTICATE_EXPIRED)
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
export function authentication (verifier: KeyVerifier, events: AuthenticationEvents, addressOf: (request: IncomingMessage) => string): Step {
  /**
   * The header is held no longer than the connection that carries it, and only while no key
   * was forgotten since (a revocation moves the generation). Parsing the header and hashing
   * the key were about a tenth of a cached read.
   */
  const lastKeyOf = new WeakMap<Socket, PresentedKey>()

  function knownKey (exchange: Exchange, authorization: string | undefined): VerifiedKey | undefined {
    if (authorization === undefined) return undefined
    const generation = verifier.generation
    const socket = exchange.request.socket
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

  function verified (exchange: Exchange, key: VerifiedKey): Answer | undefined {
    // A remembered key carries its expiry: comparing it with the clock here is what refuses it on every instance at once.
    if (key.expiresAt !== Infinity && hasExpired(key, Date.now())) {
      events.keyExpired(key, addressOf(exchange.request))
      return errorAnswer(expiredKeyError(key))
    }
    exchange.key = key
    return undefined
  }

  return {
    name: 'authentication',
    scope: 'api',
    onRequest: function authenticateRequest (exchange) {
      if (isPublic(exchange)) return undefined
      if (headerCount(exchange.request, 'authorization') > 1) return errorAnswer(ApiError.invalidRequest('send one Authorization header, not several'))
      const authorization = exchange.headers.authorization
      const known = knownKey(exchange, authorization)
      if (known !== undefined) return verified(exchange, known)
      return authenticate(verifier, authorization).then((key) => verified(exchange, key))
    }
  }
}
