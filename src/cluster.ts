import cluster, { type Worker } from 'node:cluster'
import type { Logger } from 'pino'
import { serviceLogger } from './app.js'
import { explainFailure } from './cli/explain-failure.js'
import type { Config } from './config.js'
import { openStore } from './storage/open-store.js'

/** More worker deaths than this within RESTART_WINDOW_MS is a crash loop: the primary stops instead of forking again. */
const MAX_DEATHS = 5
const RESTART_WINDOW_MS = 10_000
/** Each worker forces its own exit after 10 s; this is the backstop for a worker that hangs anyway. */
const SHUTDOWN_DEADLINE_MS = 15_000

/**
 * The cluster primary (WEB_CONCURRENCY > 1): migrates the database once, forks that many
 * workers that each run the ordinary serve path on the same HOST:PORT, replaces a worker
 * that dies, and on SIGTERM or SIGINT passes the signal on and resolves once every worker
 * has exited, with process.exitCode 0 when all stopped cleanly and 1 otherwise. It serves
 * no requests itself.
 */
export async function runPrimary (config: Readonly<Config>): Promise<void> {
  const logger = serviceLogger(config)
  const workers = new Set<Worker>()
  const deaths: number[] = []
  let forked = false
  let stopping = false
  let failed = false
  let listened = false
  let deadline: NodeJS.Timeout | undefined
  let resolveStopped: () => void = () => {}
  const stopped = new Promise<void>((resolve) => { resolveStopped = resolve })

  const finish = (): void => {
    clearTimeout(deadline)
    process.removeListener('SIGTERM', onSignal)
    process.removeListener('SIGINT', onSignal)
    process.exitCode = failed ? 1 : 0
    logger.info('stopped')
    resolveStopped()
  }

  const stopAll = (signal: NodeJS.Signals): void => {
    if (stopping) return
    stopping = true
    if (!forked) return // the start-up sequence finishes once migrations are done
    deadline = setTimeout(() => {
      logger.error({ workerPids: [...workers].map((worker) => worker.process.pid) }, 'workers took too long to stop; killing them')
      failed = true
      for (const worker of workers) worker.process.kill('SIGKILL')
    }, SHUTDOWN_DEADLINE_MS).unref()
    for (const worker of workers) worker.process.kill(signal)
    if (workers.size === 0) finish()
  }

  // Repeats are ignored: Ctrl-C in a terminal reaches the workers and the primary alike, and a
  // worker stops once however many signals it gets.
  function onSignal (signal: NodeJS.Signals): void {
    if (stopping) return
    logger.info({ signal }, 'shutting down: stopping the workers')
    stopAll(signal)
  }
  // Installed before anything starts, as in the single process.
  process.on('SIGTERM', onSignal)
  process.on('SIGINT', onSignal)

  try {
    const store = openStore(config, {
      onError: (error) => logger.error({ err: error }, 'database connection error'),
      onWarning: (message) => logger.warn(message)
    })
    try {
      const applied = await store.migrate()
      if (applied.length > 0) logger.info({ versions: applied }, 'applied database migrations')
    } finally {
      await store.close()
    }
  } catch (error) {
    const explained = explainFailure(error, config)
    if (explained === undefined) logger.fatal({ err: error }, 'could not start')
    else process.stderr.write(`error: ${explained}\n`)
    failed = true
    finish()
    return
  }
  if (stopping) {
    finish()
    return
  }

  const fork = (): void => { workers.add(cluster.fork()) }

  cluster.on('online', (worker) => {
    logger.info({ worker: worker.id, workerPid: worker.process.pid }, 'worker started')
  })
  cluster.on('listening', () => { listened = true })
  cluster.on('exit', (worker, code, signal) => {
    workers.delete(worker)
    const how = { worker: worker.id, workerPid: worker.process.pid, code, signal }
    if (stopping) {
      // A worker killed by the forwarded signal had not installed its handler yet: it served nothing.
      if (code !== 0 && signal !== 'SIGTERM' && signal !== 'SIGINT') {
        failed = true
        logger.error(how, 'worker did not stop cleanly')
      }
      if (workers.size === 0) finish()
      return
    }
    if (!listened) {
      logger.fatal(how, 'could not start: a worker exited before any worker listened')
      failed = true
      stopAll('SIGTERM')
      return
    }
    const now = Date.now()
    deaths.push(now)
    while (deaths[0] !== undefined && deaths[0] <= now - RESTART_WINDOW_MS) deaths.shift()
    if (deaths.length > MAX_DEATHS) {
      logger.fatal(how, `${deaths.length} workers died within ${RESTART_WINDOW_MS / 1000} s; stopping`)
      failed = true
      stopAll('SIGTERM')
      return
    }
    logger.error(how, 'worker died; starting a replacement')
    fork()
  })

  logger.info({ workers: config.webConcurrency }, 'starting workers')
  for (let i = 0; i < config.webConcurrency; i++) fork()
  forked = true
  await stopped
}

/**
 * In a cluster worker, lets the process exit once its work is done (the channel to the primary
 * would keep it alive), with its own exit code; does nothing in a single process.
 */
export function leaveCluster (): void {
  if (cluster.isWorker && cluster.worker?.isConnected() === true) cluster.worker.disconnect()
}

/** In a cluster worker, the logger whose lines also carry the worker id; the same logger otherwise. */
export function withWorkerId (logger: Logger): Logger {
  return cluster.worker === undefined ? logger : logger.child({ worker: cluster.worker.id })
}
