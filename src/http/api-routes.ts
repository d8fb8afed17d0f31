import { METHODS } from 'node:http'
import FindMyWay from 'find-my-way'
import leven from 'leven'
import { MAX_PATH_SEGMENT_LENGTH } from './errors.js'
import type { Exchange } from './exchange.js'
import { allowedMethods, type Operation } from './operation.js'

/** A path of the API and the operations it has, by method. */
export interface Resource {
  /** As metrics label it: `/v1/pets/:petId`. */
  readonly template: string
  /** By method; HEAD answers as GET does. */
  readonly operations: ReadonlyMap<string, Operation>
  /** The Allow field of its 405 and OPTIONS answers. */
  readonly allow: string
}

/** What the router found for a request: its path's resource, the operation its method names (if any), the parameters. */
export interface Route {
  readonly resource: Resource
  readonly operation: Operation | undefined
  readonly params: Record<string, string | undefined>
  /** The query, as parsed with the path (fast-querystring: a repeated parameter is an array). */
  readonly query: Record<string, unknown>
}

/** How many characters a mistyped path may differ by from the path it is taken to mean, as the CLI's commands may. */
const HINT_MAX_DISTANCE = 3
/** Longer paths get no hint: nobody mistypes one this long, and the comparison stays cheap. */
const HINT_MAX_PATH_LENGTH = 200

/**
 * The API path most likely meant by a path that matches none: each literal segment of a template
 * compared with the segment typed in its place (a parameter takes any), and `/v1` put in front of a
 * path written without it. Undefined when nothing is close enough.
 */
export function closestApiPath (templates: readonly string[], path: string): string | undefined {
  if (path.length > HINT_MAX_PATH_LENGTH) return undefined
  const typed = path.split('/').filter((segment) => segment !== '')
  if (typed[0] !== 'v1') typed.unshift('v1')
  let best: { path: string, distance: number } | undefined
  for (const template of templates) {
    const segments = template.split('/').filter((segment) => segment !== '')
    if (segments.length !== typed.length) continue
    let distance = 0
    for (const [index, segment] of segments.entries()) {
      if (!segment.startsWith(':')) distance += leven(segment, typed[index] as string, { maxDistance: HINT_MAX_DISTANCE + 1 })
    }
    const meant = '/' + segments.map((segment, index) => segment.startsWith(':') ? typed[index] : segment).join('/')
    if (distance <= HINT_MAX_DISTANCE && meant !== path && (best === undefined || distance < best.distance)) best = { path: meant, distance }
  }
  return best?.path
}

/** A path segment longer than MAX_PATH_SEGMENT_LENGTH. */
const SEGMENT_TOO_LONG = 'segment too long'

/** What Exchange.routed holds once the router was asked: the route, null when no path of the API matches, or a path segment too long. */
export type Routed = Route | null | typeof SEGMENT_TOO_LONG

/**
 * The API's operations, found by method and path with find-my-way (the router Fastify uses).
 * What a request's route is, is asked by several steps (routing, and the metrics and usage counts
 * of a request refused before it), and found once.
 */
export class ApiRoutes {
  private readonly router = FindMyWay({
    maxParamLength: MAX_PATH_SEGMENT_LENGTH,
    // Found with no store of its own: see lookUp.
    onMaxParamLength: () => {}
  })

  private readonly templates: string[] = []

  constructor (readonly operations: readonly Operation[]) {
    const byPath = new Map<string, Operation[]>()
    for (const operation of operations) byPath.set(operation.url, [...byPath.get(operation.url) ?? [], operation])
    for (const [url, served] of byPath) {
      const template = `/v1${url}`
      this.templates.push(template)
      const byMethod = new Map(served.map((operation) => [operation.method as string, operation]))
      const get = byMethod.get('GET')
      if (get !== undefined) byMethod.set('HEAD', get)
      const resource: Resource = { template, operations: byMethod, allow: allowedMethods(served) }
      // Every method Node accepts routes to the path, so that a known path answers 405 with Allow instead of 404.
      this.router.on(METHODS.filter((method) => method !== 'CONNECT') as FindMyWay.HTTPMethod[], template, () => {}, resource)
    }
  }

  /** The request's route, or undefined when no path of the API matches (or a path segment is too long to route). */
  routeOf (exchange: Exchange): Route | undefined {
    const routed = this.routed(exchange)
    return routed === null || routed === SEGMENT_TOO_LONG ? undefined : routed
  }

  /** Whether the path has a segment longer than MAX_PATH_SEGMENT_LENGTH, which the router does not take. */
  hasOverlongSegment (exchange: Exchange): boolean {
    return this.routed(exchange) === SEGMENT_TOO_LONG
  }

  /** The API path a path that matches none most likely meant (closestApiPath), if any. */
  closestPath (path: string): string | undefined {
    return closestApiPath(this.templates, path)
  }

  /** The route template as metrics label it: the path's, or `unmatched`. */
  templateOf (exchange: Exchange): string {
    return this.routeOf(exchange)?.resource.template ?? 'unmatched'
  }

  /** What the router finds for the request, asked once and kept on the exchange. */
  private routed (exchange: Exchange): Routed {
    if (exchange.routed === undefined) exchange.routed = this.lookUp(exchange)
    return exchange.routed
  }

  private lookUp (exchange: Exchange): Routed {
    const found = this.router.find(exchange.method as FindMyWay.HTTPMethod, exchange.url)
    if (found === null) return null
    // The router's answer for a parameter over maxParamLength is the onMaxParamLength handler, without a store.
    if (found.store === null) return SEGMENT_TOO_LONG
    const resource = found.store as Resource
    return { resource, operation: resource.operations.get(exchange.method), params: found.params, query: found.searchParams }
  }
}
