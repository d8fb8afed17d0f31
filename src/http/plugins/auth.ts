import type { FastifyInstance, FastifyRequest } from 'fastify'
import { bearerTokenOf } from '../../core/api-keys.js'
import { ApiError } from '../../core/errors.js'
import type { KeyVerifier, VerifiedKey } from '../../services/key-verifier.js'
import { WWW_AUTHENTICATE, WWW_AUTHENTICATE_INVALID } from '../headers.js'

declare module 'fastify' {
  interface FastifyRequest {
    apiKey: VerifiedKey | null
  }
  interface FastifyContextConfig {
    /** Routes under /v1 that anyone may call without a key. */
    public?: boolean
  }
}

/**
 * CONTRACT.md: everything under /v1 except the OpenAPI document is authenticated
 * before anything else, unknown paths and wrong methods included, so a request
 * without a valid key gets 401 whatever else is wrong with it.
 */
function requiresKey (request: FastifyRequest): boolean {
  const route = request.routeOptions.url
  if (route !== undefined) return route.startsWith('/v1') && request.routeOptions.config.public !== true
  return isUnderV1(request.url)
}

export function isUnderV1 (url: string): boolean {
  return /^\/v1(\/|$|\?)/.test(url)
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

export function registerAuth (app: FastifyInstance, verifier: KeyVerifier): void {
  app.decorateRequest('apiKey', null)
  // Callback style with a synchronous path for keys already verified: the common case costs
  // one SHA-256 and a map lookup, and no promise.
  app.addHook('onRequest', function authenticateRequest (request, _reply, done) {
    if (!requiresKey(request)) {
      done()
      return
    }
    const { scheme, token } = bearerTokenOf(request.headers.authorization)
    const known = scheme === 'bearer' && token !== undefined ? verifier.cached(token) : undefined
    if (known !== undefined) {
      request.apiKey = known
      done()
      return
    }
    authenticate(verifier, request.headers.authorization).then((key) => {
      request.apiKey = key
      done()
    }, done)
  })
}
