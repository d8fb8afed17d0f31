import type { FastifyInstance } from 'fastify'
import swaggerUi from '@fastify/swagger-ui'
import { registerMethodFallbacks } from './method-fallbacks.js'
import { JSON_TYPE } from '../headers.js'
import { documentJson } from '../plugins/openapi.js'
import { errorResponses } from '../schemas/error.js'

const SHEDDING = { summary: 'Shedding load', code: 'service_unavailable', message: 'the service is overloaded; retry shortly' } as const
const DRAINING = { summary: 'Draining before a stop', code: 'service_unavailable', message: 'the service is shutting down; retry shortly' } as const

/** The OpenAPI document (public) and the API reference page, both served from this process: no CDN. */
export async function docsRoutes (app: FastifyInstance): Promise<void> {
  app.get('/v1/openapi.json', {
    config: { public: true },
    schema: {
      operationId: 'getOpenApiDocument',
      summary: 'This OpenAPI document',
      description: 'Addition to the specification: the OpenAPI 3.1 document of the running service. No API key needed.',
      tags: ['meta'],
      security: [],
      'x-stability': 'beta',
      response: {
        200: { description: 'The OpenAPI 3.1 document.', type: 'object', additionalProperties: true },
        // No key, so no rate limit and no database: only shedding and draining can refuse it.
        ...errorResponses([503], { 503: { overloaded: SHEDDING, shuttingDown: DRAINING } })
      }
    }
  }, async function getOpenApiDocument (_request, reply) {
    return reply.type(JSON_TYPE).send(documentJson(app.swagger()))
  })
  registerMethodFallbacks(app, '/v1/openapi.json', ['GET'])

  await app.register(swaggerUi, {
    routePrefix: '/docs',
    uiConfig: { url: '/v1/openapi.json', deepLinking: true, displayOperationId: true, defaultModelsExpandDepth: 1 },
    staticCSP: true
  })
}
