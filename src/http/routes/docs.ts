import { readFileSync } from 'node:fs'
import { join } from 'node:path'
import type { FastifyInstance } from 'fastify'
import swaggerUi from '@fastify/swagger-ui'
import { WEB_ASSETS_DIR } from '../../portal/routes.js'

const TITLE = 'Animal Store API'

/** The API reference page, served from this process: no CDN. */
export async function docsRoutes (app: FastifyInstance): Promise<void> {
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
