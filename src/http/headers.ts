import type { IncomingMessage } from 'node:http'
import type { PetStatus } from '../core/pets.js'

/** When getPet was deprecated (RFC 9745 form): 2025-12-05T00:00:00Z, five years before its sunset. */
export const GET_PET_DEPRECATED_AT = Date.UTC(2025, 11, 5) / 1000
export const GET_PET_SUNSET = 'Thu, 05 Dec 2030 00:00:00 GMT'

export function deprecationHeaders (): Record<string, string> {
  return {
    deprecation: `@${GET_PET_DEPRECATED_AT}`,
    sunset: GET_PET_SUNSET,
    link: '</v1/pets>; rel="successor-version"'
  }
}

/** The media type of every JSON answer. */
export const JSON_TYPE = 'application/json; charset=utf-8'

export function petLocation (id: number): string {
  return `/v1/pets/${id}`
}

/** The header fields of createPet's 201 (Content-Length is the sender's). */
export function createdHeaders (id: number): string[] {
  return ['content-type', JSON_TYPE, 'location', petLocation(id)]
}

/** RFC 8288 link to the next page; `base` is the public base URL of the API (ending in /v1). */
export function nextPageLink (base: string, page: { limit: number, status: PetStatus | undefined, cursor: string }): string {
  const status = page.status === undefined ? '' : `&status=${page.status}`
  return `<${base}/pets?limit=${page.limit}${status}&cursor=${page.cursor}>; rel="next"`
}

export const WWW_AUTHENTICATE = 'Bearer realm="animal-store"'
export const WWW_AUTHENTICATE_INVALID = 'Bearer realm="animal-store", error="invalid_token"'
export const WWW_AUTHENTICATE_EXPIRED = 'Bearer realm="animal-store", error="invalid_token", error_description="the API key expired"'

/** RFC 6750 section 3.1: the challenge of a valid key that lacks the scope an operation needs. */
export function insufficientScopeChallenge (scope: string): string {
  return `Bearer realm="animal-store", error="insufficient_scope", scope="${scope}"`
}

/** RFC 9110 If-None-Match: true when any listed tag (weak comparison) or * matches. */
export function ifNoneMatchHits (header: string | undefined, etag: string): boolean {
  if (header === undefined) return false
  return header.split(',').some((tag) => {
    const trimmed = tag.trim()
    return trimmed === '*' || trimmed === etag || trimmed === `W/${etag}`
  })
}

/**
 * How many times the request names a header field (`name` in lower case). Node keeps only the first
 * of a repeated Authorization or Content-Type; the raw list shows the others.
 */
export function headerCount (request: Pick<IncomingMessage, 'rawHeaders'>, name: string): number {
  let count = 0
  const headers = request.rawHeaders
  for (let index = 0; index < headers.length; index += 2) {
    const field = headers[index] as string
    if (field.length === name.length && field.toLowerCase() === name) count++
  }
  return count
}
