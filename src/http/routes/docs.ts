import { readFileSync } from 'node:fs'
import { join } from 'node:path'
import type { FastifyInstance } from 'fastify'
import swaggerUi from '@fastify/swagger-ui'
import { WEB_ASSETS_DIR } from '../../portal/routes.js'
import { registerMethodFallbacks } from './method-fallbacks.js'
import { JSON_TYPE } from '../headers.js'
import { documentJson } from '../plugins/openapi.js'
import { errorResponses } from '../schemas/error.js'

const TITLE = 'Animal Store API'

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
    uiConfig: {
      // No top bar: it holds the framework's logo and a box to load other documents. The document is
      // /v1/openapi.json, which reference.js hands to Swagger UI (the plugin would give it /docs/json).
      layout: 'BaseLayout',
      deepLinking: true,
      displayOperationId: true,
      displayRequestDuration: true,
      defaultModelsExpandDepth: 1,
      docExpansion: 'list',
      // A key typed into "Authorize" stays in this tab only.
      persistAuthorization: false,
      tryItOutEnabled: false
    },
    theme: {
      title: TITLE,
      favicon: [{ filename: 'favicon.svg', rel: 'icon', sizes: 'any', type: 'image/svg+xml', content: readFileSync(join(WEB_ASSETS_DIR, 'favicon.svg')) }],
      css: [{ filename: 'reference.css', content: readFileSync(join(WEB_ASSETS_DIR, 'reference.css'), 'utf8') }],
      js: [{ filename: 'reference.js', content: readFileSync(join(WEB_ASSETS_DIR, 'reference.js'), 'utf8') }]
    },
    staticCSP: REFERENCE_POLICY,
    // Nothing leaves the service: no online validator badge.
    validatorUrl: false
  })
}

/**
 * The page's own policy: everything from this origin (Swagger UI needs no inline script or
 * style: the plugin's list of hashes for them is empty), and no upgrade-insecure-requests, which
 * sends every asset of a page served over plain HTTP at any host but localhost to https, where
 * nothing answers.
 */
const REFERENCE_POLICY = [
  "default-src 'self'",
  "base-uri 'self'",
  "connect-src 'self'",
  "font-src 'self' data:",
  "form-action 'self'",
  "frame-ancestors 'self'",
  "img-src 'self' data:",
  "object-src 'none'",
  "script-src 'self'",
  "script-src-attr 'none'",
  "style-src 'self'"
].join('; ')
