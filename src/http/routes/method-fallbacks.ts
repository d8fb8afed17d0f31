import type { FastifyInstance, HTTPMethods } from 'fastify'
import { ApiError } from '../../core/errors.js'

/**
 * Answers the methods a path does not serve: OPTIONS with 204 and Allow, anything
 * else with 405 and Allow. The answer comes from onRequest, after authentication
 * and before any body is read, so a bad body never hides the 405.
 */
export function registerMethodFallbacks (app: FastifyInstance, url: string, served: HTTPMethods[]): void {
  const allowed = served.includes('GET') ? [...served, 'HEAD', 'OPTIONS'] : [...served, 'OPTIONS']
  const allow = [...new Set(allowed)].join(', ')
  // Every method the router knows (WebDAV's, TRACE, QUERY …), not just the common five.
  const others = (app.supportedMethods as HTTPMethods[]).filter((method) => !allowed.includes(method))
  const path = (app.prefix + url).replace(/:(\w+)/g, '{$1}')

  app.route({
    method: 'OPTIONS',
    url,
    schema: { hide: true },
    onRequest: async function options (_request, reply) {
      await reply.code(204).header('allow', allow).send()
    },
    handler: async function unreachable () {}
  })
  if (others.length === 0) return
  app.route({
    method: others,
    url,
    exposeHeadRoute: false,
    schema: { hide: true },
    onRequest: async function methodNotAllowed (request) {
      throw new ApiError('method_not_allowed', `${request.method} is not allowed on ${path}; allowed: ${allow}`, { allow })
    },
    handler: async function unreachable () {}
  })
}
