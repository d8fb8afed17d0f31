import type { FastifyInstance } from 'fastify'
import swaggerUi from '@fastify/swagger-ui'

/** The API reference page, served from this process: no CDN. */
export async function docsRoutes (app: FastifyInstance): Promise<void> {
  await app.register(swaggerUi, {
    routePrefix: '/docs',
    uiConfig: { url: '/v1/openapi.json', deepLinking: true, displayOperationId: true, defaultModelsExpandDepth: 1 },
    staticCSP: true
  })
}
