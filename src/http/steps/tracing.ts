import type { IncomingMessage } from 'node:http'
import { context, propagation, ROOT_CONTEXT, SpanKind, SpanStatusCode, trace, type Attributes } from '@opentelemetry/api'
import {
  ATTR_CLIENT_ADDRESS, ATTR_HTTP_REQUEST_METHOD, ATTR_HTTP_RESPONSE_STATUS_CODE, ATTR_HTTP_ROUTE, ATTR_NETWORK_PROTOCOL_VERSION,
  ATTR_SERVER_ADDRESS, ATTR_SERVER_PORT, ATTR_URL_PATH, ATTR_URL_QUERY, ATTR_URL_SCHEME, ATTR_USER_AGENT_ORIGINAL
} from '@opentelemetry/semantic-conventions'
import type { ApiRoutes } from '../api-routes.js'
import type { Exchange } from '../exchange.js'
import type { Step } from '../pipeline.js'
import { sampledSpan } from '../../services/tracing.js'
import { loggableUrl } from './access-log.js'

/** What W3C trace-context extraction reads of the request: its header fields, as Node gives them. */
const HEADERS = {
  get: (headers: IncomingMessage['headers'], name: string) => headers[name],
  keys: (headers: IncomingMessage['headers']) => Object.keys(headers)
}

/** The Host field's name and port, as the client addressed the server. */
function serverOf (host: string | undefined): [string, number | undefined] {
  if (host === undefined) return ['', undefined]
  const colon = host.lastIndexOf(':')
  if (colon === -1 || host.endsWith(']')) return [host, undefined]
  const port = Number(host.slice(colon + 1))
  return [host.slice(0, colon), Number.isInteger(port) ? port : undefined]
}

/** The request's attributes as the stable HTTP semantic conventions name them; the URL is the access log's, keys redacted. */
function requestAttributes (exchange: Exchange, addressOf: (request: IncomingMessage) => string): Attributes {
  const { request } = exchange
  const url = loggableUrl(exchange.url)
  const query = url.indexOf('?')
  const [serverAddress, serverPort] = serverOf(request.headers.host)
  return {
    [ATTR_HTTP_REQUEST_METHOD]: exchange.method,
    [ATTR_URL_PATH]: query === -1 ? url : url.slice(0, query),
    ...(query !== -1 && { [ATTR_URL_QUERY]: url.slice(query + 1) }),
    [ATTR_URL_SCHEME]: 'http',
    [ATTR_SERVER_ADDRESS]: serverAddress,
    ...(serverPort !== undefined && { [ATTR_SERVER_PORT]: serverPort }),
    [ATTR_CLIENT_ADDRESS]: addressOf(request),
    [ATTR_NETWORK_PROTOCOL_VERSION]: request.httpVersion,
    ...(request.headers['user-agent'] !== undefined && { [ATTR_USER_AGENT_ORIGINAL]: request.headers['user-agent'] })
  }
}

/**
 * The request's route as the span's name and `http.route` write it, parameters in braces as the
 * API's OpenAPI document writes them (`/v1/pets/{petId}`); undefined for a request no route matched.
 */
function routeOf (exchange: Exchange, routes: ApiRoutes): string | undefined {
  const route = exchange.isApi ? routes.templateOf(exchange) : exchange.frameworkRoute
  return route === undefined || route === 'unmatched' ? undefined : route.replace(/:([A-Za-z0-9_]+)/g, '{$1}')
}

/**
 * One server span per request the sampler keeps, when tracing is on (services/tracing.ts): it
 * continues the caller's `traceparent`, and every later step, the handler and what they wait for
 * run in its context, so the database, the key lookup, the rate limit and the password hashing make
 * its children. Its attributes are the stable HTTP semantic conventions; the URL is the access
 * log's, keys redacted. Without tracing the step has no part in any request.
 */
export function tracing (traced: boolean, routes: ApiRoutes, addressOf: (request: IncomingMessage) => string): Step {
  if (!traced) return { name: 'trace', scope: 'every request' }
  return {
    name: 'trace',
    scope: 'every request',
    around: function inRequestSpan (exchange, proceed) {
      const { headers } = exchange
      // Most requests carry no traceparent, and have nothing to extract.
      const parent = headers.traceparent === undefined ? ROOT_CONTEXT : propagation.extract(ROOT_CONTEXT, headers, HEADERS)
      const span = sampledSpan(exchange.method, SpanKind.SERVER, parent, () => requestAttributes(exchange, addressOf))
      // A request the sampler leaves out has no span and no context: it runs as without tracing, and
      // its log lines carry the caller's trace id when it sent a traceparent (request-logger.ts).
      if (span === undefined) {
        proceed()
        return
      }
      exchange.span = span
      context.with(trace.setSpan(parent, span), proceed)
    },
    onDone: function endRequestSpan (exchange) {
      const span = exchange.span
      if (span === undefined) return
      const route = routeOf(exchange, routes)
      if (route !== undefined) {
        span.updateName(`${exchange.method} ${route}`)
        span.setAttribute(ATTR_HTTP_ROUTE, route)
      }
      if (exchange.abandoned) span.setAttribute('error.type', 'client_gone')
      else span.setAttribute(ATTR_HTTP_RESPONSE_STATUS_CODE, exchange.statusCode)
      if (exchange.statusCode >= 500) {
        span.setAttribute('error.type', String(exchange.statusCode))
        span.setStatus({ code: SpanStatusCode.ERROR })
      }
      span.end()
    }
  }
}
