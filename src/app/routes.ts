import swagger, { type StaticDocumentSpec } from '@fastify/swagger'
import type { FastifyInstance } from 'fastify'
import type { Config } from '../config.js'
import { scryptParamsAt } from '../core/passwords.js'
import { ApiRoutes } from '../http/api-routes.js'
import { describeApi, documentJson } from '../http/plugins/openapi.js'
import { docsRoutes } from '../http/routes/docs.js'
import { healthRoutes } from '../http/routes/health.js'
import { metricsRoutes } from '../http/routes/metrics.js'
import { openApiDocumentOperation } from '../http/routes/openapi-document.js'
import { petOperations, type PetOperationsOptions } from '../http/routes/pets.js'
import { rootRoutes } from '../http/routes/root.js'
import { storeOrderOperations } from '../http/routes/store-orders.js'
import { portalRoutes } from '../portal/routes.js'
import { mailLinksOf } from '../services/mail-messages.js'
import type { AppServices } from './services.js'

/** The API's operations, and their OpenAPI document, built from their schemas once. */
export async function apiRoutes (config: Readonly<Config>, services: PetOperationsOptions): Promise<{ routes: ApiRoutes, document: unknown }> {
  let documentText = ''
  const routes = new ApiRoutes([
    ...petOperations(services),
    ...storeOrderOperations(),
    openApiDocumentOperation(() => documentText)
  ])
  const document = await describeApi(routes.operations, { publicBaseUrl: config.publicBaseUrl, stagingBaseUrl: config.stagingBaseUrl })
  documentText = documentJson(document)
  return { routes, document }
}

/** The framework's routes, everything outside /v1: the reference page, the probes, the metrics and the developer portal. */
export async function registerFrameworkRoutes (app: FastifyInstance, { config, store, metrics, readiness, document, log, sandbox }: AppServices): Promise<void> {
  // The reference page's plugin reads the document through @fastify/swagger: the same one, given as it is.
  await app.register(swagger, { mode: 'static', specification: { document } as StaticDocumentSpec })
  await app.register(docsRoutes)
  await app.register(rootRoutes)
  await app.register(healthRoutes, { store, readiness })
  if (config.metricsEnabled && config.metricsToken !== undefined) await app.register(metricsRoutes, { metrics, token: config.metricsToken })
  // Debug, not info: most first runs need no metrics, and the start-up stays one line.
  else if (config.metricsEnabled) log.debug('GET /metrics is off: set METRICS_TOKEN to a secret of 16 or more characters to serve it to scrapers that send that token')
  await app.register(portalRoutes, { prefix: '/portal', store, publicBaseUrl: config.publicBaseUrl, links: mailLinksOf(config), sandbox, passwordParams: scryptParamsAt(config.passwordHashCost) })
}
