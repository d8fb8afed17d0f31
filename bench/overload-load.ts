/**
 * The open-loop load generator of bench/overload.ts, run in its own process (the parent pins
 * it to its own core). Request i is due at i / rate seconds, for `durationMs`, whatever the
 * server answers. It goes out at once on an idle keep-alive connection of a fixed population
 * of `connections` (opened and warmed before the schedule starts, one request at a time on
 * each, no pipelining: so many independent clients); when every connection is busy it waits,
 * first come first served, and a request that has waited `timeoutMs` is abandoned and counted
 * as a timeout. When the schedule ends the overload stops: requests still waiting are abandoned
 * (and counted as errors), those in flight get up to `timeoutMs` to be answered. Latency runs from the moment the request was due, so it includes that wait
 * (`acceptedP99Ms`); the time from being written to being answered is reported apart
 * (`acceptedServiceP99Ms`), and so is how late the generator itself was against the schedule (lag).
 *
 * It speaks HTTP/1.1 over node:net with prebuilt requests and reads only each response's status
 * line and framing (Content-Length or chunked): a general-purpose client (undici) tops out near
 * 15,000 requests a second on one core, below the service's own saturation rate.
 *
 * Input: one JSON argument (LoadOptions). Output on stdout, one JSON object a line:
 * `{ "type": "ready" }` once the connections are open and warmed, `{ "type": "stopped" }` when
 * the last request has fallen due, then the LoadResult.
 */
import { connect, type Socket } from 'node:net'
import { performance } from 'node:perf_hooks'

export interface LoadOptions {
  host: string
  port: number
  key: string
  /** Requests a second, GET and POST together. */
  rate: number
  durationMs: number
  /** One request in `postEvery` is a POST /v1/pets; the others GET /v1/pets?limit=20. */
  postEvery: number
  connections: number
  /** How long one request may wait and stay unanswered, and how long answers are awaited once the schedule ends. */
  timeoutMs: number
}

export interface SecondStats {
  second: number
  /** Requests written to the server this second. */
  sent: number
  ok: number
  shed: number
  limited: number
  other: number
  errors: number
  /** p99 latency (from due time) of the 2xx answered this second. */
  okP99Ms: number
  /** Requests waiting for a free connection at the end of this second. */
  waiting: number
}

export interface LoadResult {
  type: 'result'
  /** Requests that fell due. */
  due: number
  /** Requests written to the server. */
  sent: number
  statuses: Record<string, number>
  byMethod: Record<string, Record<string, number>>
  /** Socket errors, timeouts and requests unanswered at the end, by kind. */
  errors: Record<string, number>
  acceptedP50Ms: number
  acceptedP99Ms: number
  acceptedMaxMs: number
  acceptedServiceP99Ms: number
  shedP50Ms: number
  shedP99Ms: number
  lagP99Ms: number
  lagMaxMs: number
  maxWaiting: number
  scheduleSeconds: number
  drainSeconds: number
  timeline: SecondStats[]
}

type Method = 'GET' | 'POST'

const options = JSON.parse(process.argv[2] ?? '{}') as LoadOptions
const commonHeaders = `Host: ${options.host}:${options.port}\r\nAuthorization: Bearer ${options.key}\r\n`
const body = JSON.stringify({ name: 'Overload', categoryId: 1, status: 'available' })
const REQUESTS: Record<Method, Buffer> = {
  GET: Buffer.from(`GET /v1/pets?limit=20 HTTP/1.1\r\n${commonHeaders}\r\n`, 'latin1'),
  POST: Buffer.from(`POST /v1/pets HTTP/1.1\r\n${commonHeaders}Content-Type: application/json\r\nContent-Length: ${Buffer.byteLength(body)}\r\n\r\n${body}`, 'latin1')
}
const WARM_UP = -1
const methodOf = (request: number): Method => request !== WARM_UP && request % options.postEvery === options.postEvery - 1 ? 'POST' : 'GET'

const interval = 1000 / options.rate
const total = Math.floor(options.durationMs / interval)
/** Per request, typed arrays rather than objects: a run holds up to a million of them. */
const dueAt = new Float64Array(total)
const sentAt = new Float64Array(total)
const lags = new Float64Array(total)
const accepted = new Float64Array(total)
const acceptedService = new Float64Array(total)
const shed = new Float64Array(total)
const waiting = new Int32Array(total)
let acceptedCount = 0
let shedCount = 0
let waitHead = 0
let waitTail = 0
let due = 0
let sent = 0
let settled = 0
let warmAnswered = 0
let maxWaiting = 0
let measuring = false
let t0 = performance.now()

const statuses: Record<string, number> = {}
const warmStatuses: Record<string, number> = {}
const byMethod: Record<string, Record<string, number>> = { GET: {}, POST: {} }
const errors: Record<string, number> = {}
const timeline: SecondStats[] = []
const acceptedBySecond: number[][] = []

const bump = (counts: Record<string, number>, name: string, by = 1): void => { counts[name] = (counts[name] ?? 0) + by }

function second (at: number): SecondStats {
  const index = Math.max(0, Math.floor((at - t0) / 1000))
  while (timeline.length <= index) {
    timeline.push({ second: timeline.length, sent: 0, ok: 0, shed: 0, limited: 0, other: 0, errors: 0, okP99Ms: 0, waiting: 0 })
    acceptedBySecond.push([])
  }
  return timeline[index] as SecondStats
}

function answered (request: number, status: number): void {
  if (request === WARM_UP) {
    warmAnswered++
    bump(warmStatuses, String(status))
    return
  }
  settled++
  const end = performance.now()
  const slot = second(end)
  bump(statuses, String(status))
  bump(byMethod[methodOf(request)] as Record<string, number>, String(status))
  if (status >= 200 && status < 300) {
    const latency = end - (dueAt[request] ?? end)
    accepted[acceptedCount] = latency
    acceptedService[acceptedCount++] = end - (sentAt[request] ?? end)
    acceptedBySecond[slot.second]?.push(latency)
    slot.ok++
  } else if (status === 503) {
    shed[shedCount++] = end - (dueAt[request] ?? end)
    slot.shed++
  } else if (status === 429) {
    slot.limited++
  } else {
    slot.other++
  }
}

function failed (request: number, kind: string): void {
  if (request === WARM_UP) {
    warmAnswered++
    bump(warmStatuses, kind)
    return
  }
  settled++
  if (!measuring) return
  bump(errors, kind)
  second(performance.now()).errors++
}

const idle: Connection[] = []

/** The next waiting request still worth sending, or undefined; those that waited too long time out. */
function nextWaiting (now: number): number | undefined {
  while (waitHead < waitTail) {
    const request = waiting[waitHead++] as number
    if (now - (dueAt[request] ?? now) < options.timeoutMs) return request
    failed(request, 'timeout (waiting for a connection)')
  }
  return undefined
}

/** One keep-alive client connection carrying one request at a time, reopened when lost. */
class Connection {
  private socket: Socket | undefined
  private request: number | undefined
  private leftover: Buffer | undefined
  private bodyLeft = 0
  private status = 0
  private mode: 'head' | 'body' | 'chunk' | 'trailer' = 'head'
  private lastError = ''

  async open (): Promise<void> {
    const socket = this.ensureSocket()
    if (socket.connecting) await new Promise<void>((resolve, reject) => { socket.once('connect', resolve).once('error', reject) })
  }

  send (request: number): void {
    this.request = request
    if (request !== WARM_UP) {
      const now = performance.now()
      sentAt[request] = now
      second(now).sent++
      sent++
    }
    this.ensureSocket().write(REQUESTS[methodOf(request)])
  }

  /** Abandons a request unanswered for longer than timeoutMs, with its connection. */
  sweep (now: number): void {
    if (this.request === undefined || this.request === WARM_UP || now - (sentAt[this.request] ?? now) < options.timeoutMs) return
    this.drop('timeout (no answer)')
  }

  /** Counts the request in flight as `kind`, closes the socket and opens another. */
  drop (kind: string, reopen = true): void {
    const request = this.request
    this.reset()
    this.socket?.destroy()
    this.socket = undefined
    if (request !== undefined) failed(request, kind)
    if (reopen) this.free()
  }

  private reset (): void {
    this.request = undefined
    this.leftover = undefined
    this.bodyLeft = 0
    this.mode = 'head'
  }

  /** Takes the next waiting request, or goes back to the idle list. */
  private free (): void {
    const request = nextWaiting(performance.now())
    if (request === undefined) idle.push(this)
    else this.send(request)
  }

  private ensureSocket (): Socket {
    if (this.socket !== undefined) return this.socket
    const socket = connect({ host: options.host, port: options.port, noDelay: true })
    this.socket = socket
    this.lastError = ''
    socket.on('data', (chunk: Buffer) => this.read(chunk))
    socket.on('error', (error: Error & { code?: string }) => { this.lastError = error.code ?? error.name })
    socket.on('close', () => {
      if (this.socket !== socket) return
      const request = this.request
      this.reset()
      this.socket = undefined
      if (request === undefined) return
      failed(request, this.lastError === '' ? 'connection closed by the server' : this.lastError)
      this.free()
    })
    return socket
  }

  private read (chunk: Buffer): void {
    const buffer = this.leftover === undefined ? chunk : Buffer.concat([this.leftover, chunk])
    let position = 0
    while (position < buffer.length) {
      if (this.bodyLeft > 0) {
        const take = Math.min(this.bodyLeft, buffer.length - position)
        this.bodyLeft -= take
        position += take
        if (this.bodyLeft === 0 && this.mode === 'body') this.complete()
        continue
      }
      if (this.mode === 'head') {
        const end = buffer.indexOf('\r\n\r\n', position, 'latin1')
        if (end === -1) break
        const head = buffer.toString('latin1', position, end)
        position = end + 4
        this.status = Number(head.slice(9, 12))
        if (/\r\ntransfer-encoding:[^\r]*chunked/i.test(head)) {
          this.mode = 'chunk'
          continue
        }
        this.bodyLeft = Number(/\r\ncontent-length:\s*(\d+)/i.exec(head)?.[1] ?? 0)
        this.mode = 'body'
        if (this.bodyLeft === 0) this.complete()
        continue
      }
      // Chunked body: a size line, then that many bytes and CRLF; size 0 ends it, then trailers up to an empty line.
      const end = buffer.indexOf('\r\n', position, 'latin1')
      if (end === -1) break
      const line = buffer.toString('latin1', position, end)
      position = end + 2
      if (this.mode === 'trailer') {
        if (line === '') this.complete()
        continue
      }
      const size = parseInt(line, 16)
      if (Number.isNaN(size)) {
        this.drop('malformed response')
        return
      }
      if (size === 0) this.mode = 'trailer'
      else this.bodyLeft = size + 2
    }
    this.leftover = position < buffer.length ? buffer.subarray(position) : undefined
  }

  private complete (): void {
    this.mode = 'head'
    const request = this.request
    if (request === undefined) {
      this.drop('response without a request')
      return
    }
    this.request = undefined
    answered(request, this.status)
    this.free()
  }
}

const percentile = (values: Float64Array | number[], count: number, p: number): number => {
  if (count === 0) return 0
  const sorted = Float64Array.from(values.slice(0, count)).sort()
  return sorted[Math.min(count - 1, Math.ceil(p * count) - 1)] ?? 0
}
const round = (ms: number): number => Math.round(ms * 10) / 10
const sleep = async (ms: number): Promise<void> => await new Promise((resolve) => setTimeout(resolve, ms))
const emit = (message: object): void => { process.stdout.write(JSON.stringify(message) + '\n') }

async function main (): Promise<void> {
  const connections = Array.from({ length: options.connections }, () => new Connection())
  // Open in batches (the listen backlog is finite) and send one GET on each, unmeasured: it
  // warms both sides and proves the key works before the schedule starts. Then a pause, so
  // that the server's event-loop delay is back to normal.
  const warmedUp = (count: number): boolean => warmAnswered >= count
  for (let i = 0; i < connections.length; i += 100) {
    const batch = connections.slice(i, i + 100)
    await Promise.all(batch.map(async (connection) => await connection.open()))
    for (const connection of batch) connection.send(WARM_UP)
    while (!warmedUp(i + batch.length)) await sleep(5)
  }
  if (warmStatuses['200'] !== connections.length) throw new Error(`warm-up answered ${JSON.stringify(warmStatuses)}, not ${connections.length} × 200`)
  await sleep(500)
  measuring = true
  emit({ type: 'ready' })

  const sweeper = setInterval(() => {
    const now = performance.now()
    for (const connection of connections) connection.sweep(now)
    second(now).waiting = waitTail - waitHead
  }, 100)
  t0 = performance.now()
  await new Promise<void>((resolve) => {
    const tick = (): void => {
      const now = performance.now()
      const dueNow = Math.min(Math.floor((now - t0) / interval) + 1, total)
      while (due < dueNow) {
        const scheduled = t0 + due * interval
        dueAt[due] = scheduled
        lags[due] = now - scheduled
        const connection = idle.pop()
        if (connection === undefined) waiting[waitTail++] = due
        else connection.send(due)
        due++
      }
      maxWaiting = Math.max(maxWaiting, waitTail - waitHead)
      if (due >= total) resolve()
      else setImmediate(tick)
    }
    tick()
  })
  // The overload stops here: what still waits for a connection is abandoned (those clients
  // give up); what is in flight at the server may still be answered.
  while (waitHead < waitTail) failed(waiting[waitHead++] as number, 'abandoned unsent when the overload stopped')
  const stoppedAt = performance.now()
  emit({ type: 'stopped' })

  const allSettled = (): boolean => settled >= total
  while (!allSettled() && performance.now() < stoppedAt + options.timeoutMs) await sleep(20)
  const drainedAt = performance.now()
  clearInterval(sweeper)
  while (waitHead < waitTail) failed(waiting[waitHead++] as number, 'unanswered at the end')
  for (const connection of connections) connection.drop('unanswered at the end', false)
  measuring = false

  timeline.forEach((slot, index) => {
    const values = acceptedBySecond[index] ?? []
    slot.okP99Ms = round(percentile(values, values.length, 0.99))
  })
  const result: LoadResult = {
    type: 'result',
    due: total,
    sent,
    statuses,
    byMethod,
    errors,
    acceptedP50Ms: round(percentile(accepted, acceptedCount, 0.5)),
    acceptedP99Ms: round(percentile(accepted, acceptedCount, 0.99)),
    acceptedMaxMs: round(percentile(accepted, acceptedCount, 1)),
    acceptedServiceP99Ms: round(percentile(acceptedService, acceptedCount, 0.99)),
    shedP50Ms: round(percentile(shed, shedCount, 0.5)),
    shedP99Ms: round(percentile(shed, shedCount, 0.99)),
    lagP99Ms: round(percentile(lags, total, 0.99)),
    lagMaxMs: round(percentile(lags, total, 1)),
    maxWaiting,
    scheduleSeconds: round((stoppedAt - t0) / 1000),
    drainSeconds: round((drainedAt - stoppedAt) / 1000),
    timeline
  }
  emit(result)
}

await main()
