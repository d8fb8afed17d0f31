import type { FastifyReply, FastifyRequest, onRequestHookHandler, RouteOptions } from 'fastify'
import type { Scope } from '../../core/api-keys.js'
import { ApiError } from '../../core/errors.js'
import type { VerifiedKey } from '../../services/key-verifier.js'
import { insufficientScopeChallenge } from '../headers.js'
import { insufficientScopeMessage, requiredScopeOf } from '../schemas/scopes.js'
import type { Step } from '../pipeline.js'

declare module 'fastify' {
  interface FastifyRequest {
    /** The operationId of the route that answers the request; `other` when none does (a 404, a 405). */
    operation: string
  }
}

/** What the step tells others about (the audit trail). */
export interface AuthorizationEvents {
  /** A request from the address asked, with a valid key, for an operation the key's scopes do not allow. */
  scopeDenied: (key: VerifiedKey, scope: Scope, operation: string, address: string) => void
}

/**
 * Names the request's operation and checks the scope it needs (its schema's `x-required-scopes`,
 * src/http/schemas/scopes.ts) against the scopes of the request's key: 403 insufficient_scope with
 * the RFC 6750 challenge otherwise. After routing, which finds the operation, and before the body is
 * read or validated.
 *
 * Each operation's check is made once, when its route is registered, and runs as the route's own
 * onRequest hook, which Fastify runs after the application's: the scope and the name are in the
 * hook, not looked up per request. No step after this one has an onRequest hook, so the order of
 * the list holds.
 */
export function authorization (events: AuthorizationEvents): Step {
  function hookFor (operation: string, scope: Scope | undefined): onRequestHookHandler {
    return function checkScope (request: FastifyRequest, _reply: FastifyReply, done: (error?: Error) => void) {
      request.operation = operation
      const key = request.apiKey
      if (scope === undefined || key === null || key.scopes.has(scope)) {
        done()
        return
      }
      events.scopeDenied(key, scope, operation, request.ip)
      done(new ApiError('insufficient_scope', insufficientScopeMessage(scope, operation), { 'www-authenticate': insufficientScopeChallenge(scope) }))
    }
  }

  return {
    name: 'authorization',
    scope: 'api',
    setUp (app) {
      app.decorateRequest('operation', 'other')
      app.addHook('onRoute', (route: RouteOptions) => {
        const operation = route.schema?.operationId
        if (operation === undefined) return
        const hook = hookFor(operation, requiredScopeOf(route.schema))
        route.onRequest = route.onRequest === undefined ? [hook] : [...[route.onRequest].flat(), hook]
      })
    }
  }
}
