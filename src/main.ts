import cluster from 'node:cluster'
import type { FastifyInstance } from 'fastify'
import { buildApp, serviceLogger } from './app.js'
import { leaveCluster, runPrimary, withWorkerId } from './cluster.js'
import { explainFailure } from './cli/explain-failure.js'
import { redactUrl, type Config } from './config.js'
import { startMailJobs } from './services/mail-jobs.js'
import { startTracing, type Tracing } from './services/tracing.js'
import { openStore } from './storage/open-store.js'
import type { Store } from './storage/store.js'
import { keepTickObjectShapes } from './tick-object-shapes.js'

const SHUTDOWN_DEADLINE_MS = 10_000

/** The start-up line, once per address listened on: where the API, its reference and the portal are. */
export const listeningLine = (address: string): string => `Animal Store listening on ${address}: API /v1, reference /docs, portal /portal`

/**
 * serve: store -> migrations -> app -> listen, and a graceful stop on SIGTERM or SIGINT.
 * With WEB_CONCURRENCY > 1 this process becomes the cluster primary, and each worker it forks runs serve.
 */
export async function serve (config: Readonly<Config>): Promise<void> {
  if (config.webConcurrency > 1 && cluster.isPrimary) return await runPrimary(config)
  // First, before start-up's garbage collections: see the module.
  keepTickObjectShapes()
  const logger = withWorkerId(await serviceLogger(config))
  let store: Store | undefined
  let app: FastifyInstance | undefined
  let tracing: Tracing | undefined
  let mail: ReturnType<typeof startMailJobs> | undefined
  let stopping: Promise<void> | undefined

  // Installed before anything starts: a signal that arrives while the server is still
  // starting (or the instant it listens) must shut it down cleanly, not kill it.
  const stop = (signal: NodeJS.Signals): void => {
    if (stopping !== undefined) return
    logger.info({ signal }, 'shutting down: finishing requests in flight')
    const deadline = setTimeout(() => {
      logger.error('shutdown took too long; exiting')
      process.exit(1)
    }, SHUTDOWN_DEADLINE_MS).unref()
    stopping = starting
      .catch(() => {})
      .then(async () => {
        await app?.close()
        await mail?.close()
        await store?.close()
        // The spans of the last requests are exported before the process ends.
        await tracing?.shutdown()
        clearTimeout(deadline)
        logger.info('stopped')
        if (process.exitCode === undefined) process.exitCode = 0
        leaveCluster()
      })
      .catch((error: unknown) => {
        logger.error({ err: error }, 'error while shutting down')
        process.exit(1)
      })
  }
  // A cluster worker may get a signal twice (Ctrl-C reaches the whole process group, and the
  // primary passes it on): it keeps listening, and stop ignores the repeat.
  const listen = cluster.isWorker ? 'on' : 'once'
  process[listen]('SIGTERM', stop)
  process[listen]('SIGINT', stop)

  const starting = (async () => {
    store = openStore(config, {
      onError: (error) => logger.error({ err: error }, 'database connection error'),
      onWarning: (message) => logger.warn(message)
    })
    const applied = await store.migrate()
    if (applied.length > 0) logger.info({ versions: applied }, 'applied database migrations')
    tracing = await startTracing(config)
    if (tracing !== undefined) logger.info(`tracing: spans are exported to ${redactUrl(tracing.url)}`)
    app = await buildApp({ config, store, logger })
    if (stopping === undefined) await app.listen({ host: config.host, port: config.port, listenTextResolver: listeningLine })
    // Every instance sends: the outbox's claims keep two from sending one message.
    if (stopping === undefined) mail = startMailJobs(config, store, logger)
  })()

  try {
    await starting
  } catch (error) {
    // A failure the operator can fix is one line on stderr naming the setting; anything else is logged whole.
    const explained = explainFailure(error, config)
    if (explained === undefined) logger.fatal({ err: error }, 'could not start')
    else process.stderr.write(`error: ${explained}\n`)
    process.exitCode = 1
    process.removeListener('SIGTERM', stop)
    process.removeListener('SIGINT', stop)
    await app?.close().catch(() => {})
    await mail?.close().catch(() => {})
    await store?.close().catch(() => {})
    await tracing?.shutdown().catch(() => {})
    leaveCluster()
  }
}
