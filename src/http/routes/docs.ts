import type { FastifyInstance } from 'fastify'
import swaggerUi from '@fastify/swagger-ui'
import { registerMethodFallbacks } from './method-fallbacks.js'
import { JSON_TYPE } from '../headers.js'

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
      response: { 200: { description: 'The OpenAPI 3.1 document.', type: 'object', additionalProperties: true } }
    }
  }, async function getOpenApiDocument (_request, reply) {
    return reply.type(JSON_TYPE).send(JSON.stringify(app.swagger()))
  })
  registerMethodFallbacks(app, '/v1/openapi.json', ['GET'])

  await app.register(swaggerUi, {
    routePrefix: '/docs',
    uiConfig: { url: '/v1/openapi.json', deepLinking: true, displayOperationId: true, defaultModelsExpandDepth: 1 },
    staticCSP: true
  })
}
