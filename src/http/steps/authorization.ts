import type { FastifyReply, FastifyRequest } from 'fastify'
import type { Scope } from '../../core/api-keys.js'
import { ApiError } from '../../core/errors.js'
import type { VerifiedKey } from '../../services/key-verifier.js'
import { insufficientScopeChallenge } from '../headers.js'
import { insufficientScopeMessage, requiredScopeOf } from '../schemas/scopes.js'
import type { Step } from '../pipeline.js'

/** What the step tells others about (the audit trail). */
export interface AuthorizationEvents {
  /** A request from the address asked, with a valid key, for an operation the key's scopes do not allow. */
  scopeDenied: (key: VerifiedKey, scope: Scope, operation: string, address: string) => void
}

/**
 * The scope an operation needs (its schema's `x-required-scopes`, src/http/schemas/scopes.ts),
 * against the scopes of the request's key: 403 insufficient_scope with the RFC 6750 challenge
 * otherwise. After routing, which finds the operation, and before the body is read or validated.
 */
export function authorization (events: AuthorizationEvents): Step {
  return {
    name: 'authorization',
    scope: 'api',
    onRequest: function checkScope (request: FastifyRequest, _reply: FastifyReply, done: (error?: Error) => void) {
      const key = request.apiKey
      if (key === null) {
        done()
        return
      }
      const schema = request.routeOptions.schema
      const scope = requiredScopeOf(schema)
      if (scope === undefined || key.scopes.has(scope)) {
        done()
        return
      }
      const operation = schema?.operationId ?? 'other'
      events.scopeDenied(key, scope, operation, request.ip)
      done(new ApiError('insufficient_scope', insufficientScopeMessage(scope, operation),
        { 'www-authenticate': insufficientScopeChallenge(scope) }))
    }
  }
}
