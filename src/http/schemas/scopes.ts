import type { FastifySchema } from 'fastify'
import { isScope, type Scope } from '../../core/api-keys.js'
import { errorResponses, type ErrorExamples } from './error.js'

/** The OpenAPI extension that names the scope an operation needs; the authorization step reads it from the route's schema. */
const REQUIRED_SCOPES = 'x-required-scopes'

/** What a key without the scope is told; the authorization step and the document's example share it. */
export function insufficientScopeMessage (scope: Scope, operation: string): string {
  return `this API key lacks the scope ${scope}, which ${operation} needs; create a key with it in the developer portal`
}

interface OperationSchema { operationId: string, description?: string, response: Record<number, unknown> }

/**
 * An operation's schema with the scope it needs: in `x-required-scopes` (what the authorization
 * step enforces), in its description, and with the 403 its refusal answers, which carries the
 * same headers as the operation's 400 (both come after the rate limit counted the request); `other403`
 * adds the operation's other reasons for a 403.
 */
export function requiresScope<S extends OperationSchema> (scope: Scope, schema: S, other403?: { description: string, examples: ErrorExamples }): S {
  const forbidden = errorResponses([403], {
    403: { insufficientScope: { summary: `A key without ${scope}`, code: 'insufficient_scope', message: insufficientScopeMessage(scope, schema.operationId) }, ...other403?.examples }
  })[403] as { headers?: object, description: string }
  if (other403 !== undefined) forbidden.description += ` ${other403.description}`
  const like400 = (schema.response[400] as { headers?: object } | undefined)?.headers
  return {
    ...schema,
    [REQUIRED_SCOPES]: [scope],
    description: `${schema.description ?? ''}\n\nRequires an API key with the scope \`${scope}\`.`.trim(),
    response: { ...schema.response, 403: { ...forbidden, headers: { ...like400, ...forbidden.headers } } }
  }
}

/** The scope the route's schema names, if any. */
export function requiredScopeOf (schema: FastifySchema | undefined): Scope | undefined {
  const scopes = (schema as Record<string, unknown> | undefined)?.[REQUIRED_SCOPES]
  const scope = Array.isArray(scopes) ? scopes[0] : undefined
  return typeof scope === 'string' && isScope(scope) ? scope : undefined
}
