import type { IncomingMessage, ServerResponse } from 'node:http'
import type { Socket } from 'node:net'
import { performance } from 'node:perf_hooks'
import type { FastifyBaseLogger } from 'fastify'
import { bearerTokenOf } from '../core/api-keys.js'
import type { KeyVerifier, VerifiedKey } from '../services/key-verifier.js'
import type { Metrics } from '../services/metrics.js'
import { accessLogFields, traceBindings } from './plugins/request-context.js'

export type RequestHandler = (request: IncomingMessage, response: ServerResponse) => void

/** A path that answers some requests in front of the framework. */
export interface HotPath {
  /** True when it took the request (and will answer it, or hand it to `framework` later). */
  take (request: IncomingMessage, response: ServerResponse, framework: RequestHandler): boolean
}

/** The key a connection presented on its last request, and the verifier's generation then. */
interface PresentedKey { authorization: string, key: VerifiedKey, generation: number }

/** Levels at which the access log (info) is written. */
const LOGS_REQUESTS: ReadonlySet<string> = new Set(['trace', 'debug', 'info'])

/**
 * What the paths that answer in front of the framework (hot reads, hot creates) share:
 * whether they may answer at all, and the bookkeeping the framework's hooks would do.
 */
export class FrontGate {
  /** Set once the app is ready (never while a per-request protection is configured); cleared when it starts closing. */
  open = false
  log: FastifyBaseLogger | undefined
  isUnderPressure: () => boolean = () => false
  /**
   * A keep-alive connection sends the same Authorization header on every request: when it is the
   * one that carried the connection's last verified key, and no key was forgotten since (a
   * revocation), that key is taken again without parsing the header or hashing the key, which was
   * about a tenth of a cached read's instructions. The header is held no longer than the connection that carries it.
   */
  private readonly lastKeyOf = new WeakMap<Socket, PresentedKey>()

  /** `metrics` is absent when METRICS_ENABLED=false. */
  constructor (readonly metrics: Metrics | undefined, readonly verifier: KeyVerifier) {}

  /** A request handler that offers each request to the hot paths in turn, then to the framework. */
  inFrontOf (framework: RequestHandler, paths: readonly HotPath[]): RequestHandler {
    return (request, response) => {
      for (const path of paths) if (path.take(request, response, framework)) return
      framework(request, response)
    }
  }

  /** The key of a request, when it was verified before; undefined leaves the request to the framework's authentication. */
  verifiedKeyOf (request: IncomingMessage): VerifiedKey | undefined {
    const { authorization } = request.headers
    const { generation } = this.verifier
    const last = this.lastKeyOf.get(request.socket)
    if (last !== undefined && last.authorization === authorization && last.generation === generation) return last.key
    const { scheme, token } = bearerTokenOf(authorization)
    const key = scheme === 'bearer' && token !== undefined ? this.verifier.peek(token) : undefined
    if (key !== undefined && authorization !== undefined) this.lastKeyOf.set(request.socket, { authorization, key, generation })
    return key
  }

  /** Counts an answer in the request metrics and writes its access-log line, as the framework's hooks do. */
  answered (request: IncomingMessage, route: string, statusCode: number, requestId: string, startedMs: number): void {
    const elapsedMs = performance.now() - startedMs
    const method = request.method ?? ''
    this.metrics?.requests.record(elapsedMs / 1000, method, route, String(statusCode))
    if (this.log !== undefined && LOGS_REQUESTS.has(this.log.level)) {
      this.log.info({ requestId, ...traceBindings(request.headers.traceparent), ...accessLogFields(method, request.url ?? '', statusCode, elapsedMs) }, 'request completed')
    }
  }
}
