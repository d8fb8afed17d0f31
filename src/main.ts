import type { FastifyInstance } from 'fastify'
import { pino } from 'pino'
import { buildApp, loggerOptions } from './app.js'
import type { Config } from './config.js'
import { openStore } from './storage/open-store.js'
import type { Store } from './storage/store.js'

const SHUTDOWN_DEADLINE_MS = 10_000

/** serve: store -> migrations -> app -> listen, and a graceful stop on SIGTERM or SIGINT. */
export async function serve (config: Readonly<Config>): Promise<void> {
  const logger = pino(loggerOptions(config))
  let store: Store | undefined
  let app: FastifyInstance | undefined
  try {
    store = openStore(config, (error) => logger.error({ err: error }, 'database connection error'))
    const applied = await store.migrate()
    if (applied.length > 0) logger.info({ versions: applied }, 'applied database migrations')
    app = await buildApp({ config, store, logger })
    await app.listen({ host: config.host, port: config.port })
  } catch (error) {
    logger.fatal({ err: error }, 'could not start')
    await app?.close().catch(() => {})
    await store?.close().catch(() => {})
    process.exitCode = 1
    return
  }

  const running = app
  const openStoreRef = store
  let stopping = false
  const stop = (signal: NodeJS.Signals): void => {
    if (stopping) return
    stopping = true
    logger.info({ signal }, 'shutting down: finishing requests in flight')
    const deadline = setTimeout(() => {
      logger.error('shutdown took too long; exiting')
      process.exit(1)
    }, SHUTDOWN_DEADLINE_MS).unref()
    running.close()
      .then(async () => openStoreRef.close())
      .then(() => {
        clearTimeout(deadline)
        logger.info('stopped')
        process.exitCode = 0
      })
      .catch((error: unknown) => {
        logger.error({ err: error }, 'error while shutting down')
        process.exit(1)
      })
  }
  process.once('SIGTERM', stop)
  process.once('SIGINT', stop)
}
