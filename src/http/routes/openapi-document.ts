import type { FastifyInstance } from 'fastify'
import { JSON_TYPE } from '../headers.js'
import { documentJson } from '../plugins/openapi.js'
import { errorResponses } from '../schemas/error.js'
import { registerMethodFallbacks } from './method-fallbacks.js'

const SHEDDING = { summary: 'Shedding load', code: 'service_unavailable', message: 'the service is overloaded; retry shortly' } as const
const DRAINING = { summary: 'Draining before a stop', code: 'service_unavailable', message: 'the service is shutting down; retry shortly' } as const

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
      response: {
        200: { description: 'The OpenAPI 3.1 document.', type: 'object', additionalProperties: true },
        // No key, so no rate limit and no database: only shedding and draining can refuse it.
        ...errorResponses([503], { 503: { overloaded: SHEDDING, shuttingDown: DRAINING } })
      }
    }
  }, async function getOpenApiDocument (_request, reply) {
    return reply.type(JSON_TYPE).send(documentJson(app.swagger()))
  })
  registerMethodFallbacks(app, '/openapi.json', ['GET'])
}
