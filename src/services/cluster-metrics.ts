import cluster, { type Worker } from 'node:cluster'
import { AggregatorRegistry, type Registry } from 'prom-client'

/** A worker asks the primary for the whole cluster's metrics; the primary asks each worker for its own. */
const CLUSTER_METRICS_REQUEST = 'animal-store:cluster-metrics'
const CLUSTER_METRICS_ANSWER = 'animal-store:cluster-metrics-answer'
const WORKER_METRICS_REQUEST = 'animal-store:worker-metrics'
const WORKER_METRICS_ANSWER = 'animal-store:worker-metrics-answer'

/** How long the primary waits for every worker's metrics: a scrape that misses a worker fails rather than reports a partial sum. */
const WORKER_ANSWER_MS = 2000
/** How long a worker waits for the primary's sum: the primary's own wait, and then some. */
const PRIMARY_ANSWER_MS = WORKER_ANSWER_MS + 1000
/** Scrapes that reach different workers within this share one gathering, as each worker's render cache does. */
const GATHER_CACHE_MS = 1000

/** A registry's metrics as getMetricsAsJSON() gives them (its `type` is the metric type's name). */
type WorkerMetrics = Array<{ name: string, help: string, type: unknown, aggregator: string, values: Array<{ value: number, labels: Record<string, string | number>, metricName?: string }> }>

interface Message { type?: unknown, id?: unknown, text?: unknown, metrics?: unknown, error?: unknown }

const isMessage = (message: unknown): message is Message => typeof message === 'object' && message !== null

/**
 * One worker's metrics as the sum expects them: each gauge's series labelled with the worker's id
 * (a gauge is a state of one process: its memory, its requests in flight, what it sees of the
 * database), and summed like every other metric, which adds nothing up since the labels differ.
 * Counters and histograms keep their labels, so each series is summed over the workers.
 */
export function labelGauges (metrics: WorkerMetrics, worker: string): WorkerMetrics {
  return metrics.map((metric) => metric.type !== 'gauge'
    ? metric
    : { ...metric, aggregator: 'sum', values: metric.values.map((value) => ({ ...value, labels: { ...value.labels, worker } })) })
}

/** The Prometheus text of the workers' metrics, summed by prom-client's cluster aggregation. */
export function sumOfWorkers (perWorker: Array<{ worker: string, metrics: WorkerMetrics }>): Promise<string> {
  return AggregatorRegistry.aggregate(perWorker.map(({ worker, metrics }) => labelGauges(metrics, worker))).metrics()
}

/**
 * In the cluster primary: answers a worker that is scraped with the metrics of every worker,
 * summed. prom-client's clusterMetrics() gathers the same way, but its request carries no worker
 * identity, which the gauges' `worker` label needs. Returns the function that stops answering.
 */
export function answerClusterMetrics (): () => void {
  let gathered: { text: Promise<string>, at: number } | undefined
  const pending = new Map<number, { asked: number, answers: Array<{ worker: string, metrics: WorkerMetrics }>, settle: (error?: Error) => void }>()
  let nextId = 0

  const gather = async (): Promise<string> => {
    const workers = Object.values(cluster.workers ?? {}).filter((worker): worker is Worker => worker?.isConnected() === true)
    const id = nextId++
    const answers: Array<{ worker: string, metrics: WorkerMetrics }> = []
    await new Promise<void>((resolve, reject) => {
      const timer = setTimeout(() => settle(new Error(`${workers.length - answers.length} of ${workers.length} workers did not send their metrics within ${WORKER_ANSWER_MS} ms`)), WORKER_ANSWER_MS)
      const settle = (error?: Error): void => {
        clearTimeout(timer)
        pending.delete(id)
        if (error === undefined) resolve()
        else reject(error)
      }
      pending.set(id, { asked: workers.length, answers, settle })
      for (const worker of workers) worker.send({ type: WORKER_METRICS_REQUEST, id })
      if (workers.length === 0) settle()
    })
    return await sumOfWorkers(answers)
  }

  const onMessage = (worker: Worker, message: unknown): void => {
    if (!isMessage(message)) return
    if (message.type === WORKER_METRICS_ANSWER && typeof message.id === 'number') {
      const request = pending.get(message.id)
      if (request === undefined) return
      if (typeof message.error === 'string') return request.settle(new Error(`worker ${worker.id}: ${message.error}`))
      request.answers.push({ worker: String(worker.id), metrics: message.metrics as WorkerMetrics })
      if (request.answers.length === request.asked) request.settle()
      return
    }
    if (message.type !== CLUSTER_METRICS_REQUEST) return
    const now = Date.now()
    if (gathered === undefined || now - gathered.at >= GATHER_CACHE_MS) gathered = { text: gather(), at: now }
    const current = gathered
    current.text.then(
      (text) => { if (worker.isConnected()) worker.send({ type: CLUSTER_METRICS_ANSWER, id: message.id, text }) },
      (error: unknown) => {
        // A failed gathering is not kept: the next scrape tries again.
        if (gathered === current) gathered = undefined
        if (worker.isConnected()) worker.send({ type: CLUSTER_METRICS_ANSWER, id: message.id, error: (error as Error).message })
      })
  }
  cluster.on('message', onMessage)
  return () => { cluster.removeListener('message', onMessage) }
}

/**
 * In a cluster worker: sends this worker's metrics to the primary when it gathers them, and
 * returns how to ask it for the sum over every worker. Returns undefined in a single process.
 */
export function clusterMetricsOfWorker (registry: Registry): { sum: () => Promise<string>, stop: () => void } | undefined {
  if (!cluster.isWorker) return undefined
  let nextId = 0
  const waiting = new Map<number, { resolve: (text: string) => void, reject: (error: Error) => void }>()
  const onMessage = (message: unknown): void => {
    if (!isMessage(message) || typeof message.id !== 'number') return
    if (message.type === WORKER_METRICS_REQUEST) {
      const id = message.id
      registry.getMetricsAsJSON().then(
        (metrics) => { process.send?.({ type: WORKER_METRICS_ANSWER, id, metrics }) },
        (error: unknown) => { process.send?.({ type: WORKER_METRICS_ANSWER, id, error: (error as Error).message }) })
      return
    }
    if (message.type !== CLUSTER_METRICS_ANSWER) return
    const request = waiting.get(message.id)
    if (request === undefined) return
    waiting.delete(message.id)
    if (typeof message.text === 'string') request.resolve(message.text)
    else request.reject(new Error(typeof message.error === 'string' ? message.error : 'the primary sent no metrics'))
  }
  process.on('message', onMessage)
  const sum = async (): Promise<string> => {
    const id = nextId++
    let timer: NodeJS.Timeout | undefined
    try {
      return await new Promise<string>((resolve, reject) => {
        waiting.set(id, { resolve, reject })
        timer = setTimeout(() => reject(new Error(`the primary did not send the cluster's metrics within ${PRIMARY_ANSWER_MS} ms`)), PRIMARY_ANSWER_MS)
        process.send?.({ type: CLUSTER_METRICS_REQUEST, id })
      })
    } finally {
      clearTimeout(timer)
      waiting.delete(id)
    }
  }
  return { sum, stop: () => { process.removeListener('message', onMessage) } }
}
