import type { FastifyInstance } from 'fastify'
import { pino, type Logger } from 'pino'
import { serverOf } from './app/server.js'
import { appServices, loggerOptions, type BuildAppOptions } from './app/services.js'
import type { Config } from './config.js'
import { pipeline } from './http/pipeline.js'
import { BatchedLogDestination } from './services/log-destination.js'

export { appServices, loggerOptions, serverOf, type BuildAppOptions }
export type { AppServices } from './app/services.js'

/** Whether lines are pretty-printed: LOG_FORMAT says so, or, left at `auto`, standard output is a terminal. */
export const writesPrettyLogs = (config: Readonly<Config>): boolean =>
  config.logFormat === 'pretty' || (config.logFormat === 'auto' && process.stdout.isTTY)

/**
 * The service's logger. For a pipe or a file: JSON lines on stdout, written in batches on the event
 * loop without waiting for the reader (services/log-destination.ts); what is still gathered is
 * written out at exit. For a person (services/pretty-logs.ts): one readable line each, through
 * pino-pretty, which is loaded only then.
 */
export async function serviceLogger (config: Readonly<Config>): Promise<Logger> {
  if (!writesPrettyLogs(config)) return pino(loggerOptions(config), new BatchedLogDestination())
  const { prettyDestination } = await import('./services/pretty-logs.js')
  return pino(loggerOptions(config), await prettyDestination())
}

/**
 * Builds the HTTP application around an open, migrated store; never listens. Its parts: the
 * services (app/services.ts), the server with the pipeline every request goes through
 * (app/server.ts, http/pipeline.ts) and the framework's routes outside /v1 (app/routes.ts).
 */
export async function buildApp (options: BuildAppOptions): Promise<FastifyInstance> {
  const services = await appServices(options)
  return await serverOf(services, pipeline(services.pipelineDeps))
}
