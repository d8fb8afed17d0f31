import type { IncomingMessage } from 'node:http'
import type { Scope } from '../../core/api-keys.js'
import { ApiError } from '../../core/errors.js'
import type { VerifiedKey } from '../../services/key-verifier.js'
import type { ApiRoutes } from '../api-routes.js'
import { errorAnswer } from '../exchange.js'
import { insufficientScopeChallenge } from '../headers.js'
import type { Operation } from '../operation.js'
import { insufficientScopeMessage, requiredScopeOf } from '../schemas/scopes.js'
import type { Step } from '../pipeline.js'

/** What the step tells others about (the audit trail). */
export interface AuthorizationEvents {
  /** A request from the address asked, with a valid key, for an operation the key's scopes do not allow. */
  scopeDenied: (key: VerifiedKey, scope: Scope, operation: string, address: string) => void
}

/**
 * Checks the scope the request's operation needs (its schema's `x-required-scopes`,
 * src/http/schemas/scopes.ts) against the scopes of the request's key: 403 insufficient_scope with
 * the RFC 6750 challenge otherwise. After routing, which finds the operation, and before the body is
 * read or validated. Each operation's scope is read from its schema once, at start-up.
 */
export function authorization (events: AuthorizationEvents, routes: ApiRoutes, addressOf: (request: IncomingMessage) => string): Step {
  const scopes = new Map<Operation, Scope | undefined>(routes.operations.map((operation) => [operation, requiredScopeOf(operation.schema)]))
  return {
    name: 'authorization',
    scope: 'api',
    onRequest: function checkScope (exchange) {
      const operation = exchange.operation as Operation
      const scope = scopes.get(operation)
      const key = exchange.key
      if (scope === undefined || key === null || key.scopes.has(scope)) return undefined
      events.scopeDenied(key, scope, operation.operationId, addressOf(exchange.request))
      return errorAnswer(new ApiError('insufficient_scope', insufficientScopeMessage(scope, operation.operationId), { 'www-authenticate': insufficientScopeChallenge(scope) }))
    }
  }
}
