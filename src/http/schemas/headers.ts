import { SCOPES } from '../../core/api-keys.js'
import { GET_PET_DEPRECATED_AT, GET_PET_SUNSET, insufficientScopeChallenge, WWW_AUTHENTICATE, WWW_AUTHENTICATE_EXPIRED, WWW_AUTHENTICATE_INVALID } from '../headers.js'

/**
 * The response headers the document describes, each with the bounds of what the server sends.
 * They document only: every route writes its headers itself.
 */

/** PUBLIC_BASE_URL is at most 2,048 characters, and a cursor at most 200. */
export const NEXT_LINK_HEADER = {
  type: 'string',
  maxLength: 2400,
  pattern: '^<[^<>]+>; rel="next"$',
  description: 'Present when more animals match: `<URL>; rel="next"` (RFC 8288). The URL is relative (`/v1/pets?…`) unless ' +
    'PUBLIC_BASE_URL is set; resolve it against the URL of the request, as a browser resolves a link.',
  examples: ['</v1/pets?limit=20&status=available&cursor=MjA.tJ5kZ8Gm1fXc0Qv3pLr2Aw>; rel="next"']
}

export const ETAG_HEADER = {
  type: 'string',
  maxLength: 29,
  pattern: '^"[A-Za-z0-9_-]{27}"$',
  description: 'Strong entity tag, present on full pages, which never change: send it back in If-None-Match to get 304.',
  examples: ['"T1PNoYwrqgwDVLtfmj7L5e0Sq02"']
}

export const LOCATION_HEADER = {
  type: 'string',
  maxLength: 28,
  pattern: '^/v1/pets/[1-9][0-9]{0,18}$',
  description: 'Path of the created animal.',
  examples: ['/v1/pets/1']
}

export const DEPRECATION_HEADERS = {
  Deprecation: { type: 'string', const: `@${GET_PET_DEPRECATED_AT}`, description: 'When this operation was deprecated (RFC 9745): 5 December 2025.' },
  Sunset: { type: 'string', const: GET_PET_SUNSET, description: 'When it will be removed (RFC 8594).' },
  Link: { type: 'string', const: '</v1/pets>; rel="successor-version"', description: 'The replacement: `GET /v1/pets` with the `status` filter.' }
}

export const WWW_AUTHENTICATE_HEADER = {
  type: 'string',
  enum: [WWW_AUTHENTICATE, WWW_AUTHENTICATE_INVALID, WWW_AUTHENTICATE_EXPIRED, ...SCOPES.map(insufficientScopeChallenge)],
  description: 'The bearer challenge (RFC 6750): with `error="invalid_token"` (401) when a key was sent but is not valid, and an `error_description` ' +
    'when it expired; with `error="insufficient_scope"` and the scope (403) when a valid key lacks the scope the operation needs.'
}

export const RETRY_AFTER_HEADER = {
  type: 'string',
  maxLength: 5,
  pattern: '^[0-9]+$',
  description: 'Seconds to wait before trying again (RFC 9110).',
  examples: ['1']
}

/**
 * The IETF httpapi draft's RateLimit fields, sent on every answer to a request with a valid key
 * while RATE_LIMIT_PER_MINUTE is set (the limit is off by default).
 */
export const RATE_LIMIT_HEADERS = {
  RateLimit: {
    type: 'string',
    maxLength: 48,
    pattern: '^"per-key";r=[0-9]+;t=[0-9]+$',
    description: 'Sent when rate limiting is configured (RATE_LIMIT_PER_MINUTE): the requests left to this API key (`r`) ' +
      'and the seconds until its window starts again (`t`), as the IETF httpapi ratelimit-headers draft writes them.',
    examples: ['"per-key";r=97;t=42']
  },
  'RateLimit-Policy': {
    type: 'string',
    maxLength: 48,
    pattern: '^"per-key";q=[0-9]+;w=60$',
    description: 'Sent when rate limiting is configured (RATE_LIMIT_PER_MINUTE): the requests allowed per API key (`q`) ' +
      'in a window of `w` seconds.',
    examples: ['"per-key";q=100;w=60']
  }
}
