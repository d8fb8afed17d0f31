import cluster, { type Worker } from 'node:cluster'
import type { Logger } from 'pino'
import { serviceLogger } from './app.js'
import { explainFailure } from './cli/explain-failure.js'
import { answerClusterMetrics } from './services/cluster-metrics.js'
import type { Config } from './config.js'
import { openStore } from './storage/open-store.js'

/** More worker deaths than this within RESTART_WINDOW_MS is a crash loop: the primary stops instead of forking again. */
const MAX_DEATHS = 5
const RESTART_WINDOW_MS = 10_000
/** Each worker forces its own exit after 10 s; this is the backstop for a worker that hangs anyway. */
const SHUTDOWN_DEADLINE_MS = 15_000

/**
 * Where the primary is: `migrating` before any worker exists, `serving` once they are forked,
 * `stopping` from a signal (or a failure) until the last worker has exited, then `stopped`.
 */
type Phase = 'migrating' | 'serving' | 'stopping' | 'stopped'

/**
 * The cluster primary (WEB_CONCURRENCY > 1): migrates the database once, forks that many
 * workers that each run the ordinary serve path on the same HOST:PORT, replaces a worker
 * that dies, and on SIGTERM or SIGINT passes the signal on and resolves once every worker
 * has exited, with process.exitCode 0 when all stopped cleanly and 1 otherwise. It serves
 * no requests itself.
 */
export async function runPrimary (config: Readonly<Config>): Promise<void> {
  const primary = new Primary(config, await serviceLogger(config))
  await primary.run()
}

class Primary {
  private phase: Phase = 'migrating'
  /** Whether any worker has listened: a worker that dies before that is a failure to start, not a crash to repair. */
  private listened = false
  private failed = false
  private readonly workers = new Set<Worker>()
  private readonly deaths: number[] = []
  private deadline: NodeJS.Timeout | undefined
  /** Stops summing the workers' metrics for a scraped worker; set while /metrics is served. */
  private stopClusterMetrics: (() => void) | undefined
  private resolveStopped: () => void = () => {}
  private readonly stopped = new Promise<void>((resolve) => { this.resolveStopped = resolve })
  // Repeats are ignored: Ctrl-C in a terminal reaches the workers and the primary alike, and a
  // worker stops once however many signals it gets.
  private readonly onSignal = (signal: NodeJS.Signals): void => {
    if (this.phase === 'stopping' || this.phase === 'stopped') return
    this.logger.info({ signal }, 'shutting down: stopping the workers')
    this.stop(signal)
  }

  constructor (private readonly config: Readonly<Config>, private readonly logger: Logger) {}

  async run (): Promise<void> {
    // Installed before anything starts, as in the single process.
    process.on('SIGTERM', this.onSignal)
    process.on('SIGINT', this.onSignal)
    if (!await this.migrate()) this.failed = true
    // A signal during the migrations stops the primary before any worker exists.
    if (this.failed || this.phase === 'stopping') {
      this.finish()
      return
    }
    this.serve()
    await this.stopped
  }

  /** Brings the schema up to date once, for every worker; false (with the reason said) when it cannot. */
  private async migrate (): Promise<boolean> {
    try {
      const store = openStore(this.config, {
        onError: (error) => this.logger.error({ err: error }, 'database connection error'),
        onWarning: (message) => this.logger.warn(message)
      })
      try {
        const applied = await store.migrate()
        if (applied.length > 0) this.logger.info({ versions: applied }, 'applied database migrations')
      } finally {
        await store.close()
      }
      return true
    } catch (error) {
      const explained = explainFailure(error, this.config)
      if (explained === undefined) this.logger.fatal({ err: error }, 'could not start')
      else process.stderr.write(`error: ${explained}\n`)
      return false
    }
  }

  private serve (): void {
    cluster.on('online', (worker) => {
      this.logger.info({ worker: worker.id, workerPid: worker.process.pid }, 'worker started')
    })
    cluster.on('listening', () => { this.listened = true })
    cluster.on('exit', (worker, code, signal) => { this.onExit(worker, code, signal) })
    if (this.config.metricsEnabled && this.config.metricsToken !== undefined) this.stopClusterMetrics = answerClusterMetrics()
    this.logger.info({ workers: this.config.webConcurrency }, 'starting workers')
    for (let i = 0; i < this.config.webConcurrency; i++) this.fork()
    this.phase = 'serving'
  }

  private fork (): void { this.workers.add(cluster.fork()) }

  private onExit (worker: Worker, code: number, signal: string): void {
    this.workers.delete(worker)
    const how = { worker: worker.id, workerPid: worker.process.pid, code, signal }
    if (this.phase === 'stopping') {
      // A worker killed by the forwarded signal had not installed its handler yet: it served nothing.
      if (code !== 0 && signal !== 'SIGTERM' && signal !== 'SIGINT') {
        this.failed = true
        this.logger.error(how, 'worker did not stop cleanly')
      }
      if (this.workers.size === 0) this.finish()
      return
    }
    if (!this.listened) return this.giveUp(how, 'could not start: a worker exited before any worker listened')
    const now = Date.now()
    this.deaths.push(now)
    while (this.deaths[0] !== undefined && this.deaths[0] <= now - RESTART_WINDOW_MS) this.deaths.shift()
    if (this.deaths.length > MAX_DEATHS) return this.giveUp(how, `${this.deaths.length} workers died within ${RESTART_WINDOW_MS / 1000} s; stopping`)
    this.logger.error(how, 'worker died; starting a replacement')
    this.fork()
  }

  private giveUp (how: object, message: string): void {
    this.logger.fatal(how, message)
    this.failed = true
    this.stop('SIGTERM')
  }

  /** Passes the signal on to every worker, with a deadline after which they are killed. */
  private stop (signal: NodeJS.Signals): void {
    const wasServing = this.phase === 'serving'
    this.phase = 'stopping'
    if (!wasServing) return // the start-up sequence finishes once migrations are done
    this.deadline = setTimeout(() => {
      this.logger.error({ workerPids: [...this.workers].map((worker) => worker.process.pid) }, 'workers took too long to stop; killing them')
      this.failed = true
      for (const worker of this.workers) worker.process.kill('SIGKILL')
    }, SHUTDOWN_DEADLINE_MS).unref()
    for (const worker of this.workers) worker.process.kill(signal)
    if (this.workers.size === 0) this.finish()
  }

  private finish (): void {
    this.phase = 'stopped'
    clearTimeout(this.deadline)
    this.stopClusterMetrics?.()
    process.removeListener('SIGTERM', this.onSignal)
    process.removeListener('SIGINT', this.onSignal)
    process.exitCode = this.failed ? 1 : 0
    this.logger.info('stopped')
    this.resolveStopped()
  }
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
