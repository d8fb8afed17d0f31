import type { FastifyInstance } from 'fastify'
import { JSON_TYPE } from '../headers.js'
import { registerMethodFallbacks } from './method-fallbacks.js'

/** GET /v1/openapi.json: the document of the running service, public (the authentication step lets it through). */
export async function openApiDocumentRoutes (app: FastifyInstance): Promise<void> {
  app.get('/openapi.json', {
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
  registerMethodFallbacks(app, '/openapi.json', ['GET'])
}
