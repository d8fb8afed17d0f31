import type { FastifyReply, FastifyRequest } from 'fastify'
import { isWellFormedCsrfToken, newCsrfToken, presessionToken, tokensMatch } from '../core/csrf.js'
import { cookieOptions, type CookiePolicy, type PortalSession } from './session.js'

export const CSRF_FIELD = '_csrf'
export const PRESESSION_COOKIE = 'portal_presession'

/**
 * CSRF protection for the sign-up and log-in forms, which are posted before a session
 * exists: a signed double-submit cookie. The cookie holds a random nonce, the form an
 * HMAC of it under a secret every instance shares.
 */
export class PresessionCsrf {
  constructor (private readonly secret: string, private readonly policy: CookiePolicy) {}

  /** The token for a form; gives the browser a nonce cookie when it has none. */
  issue (request: FastifyRequest, reply: FastifyReply): string {
    let nonce = request.cookies[PRESESSION_COOKIE]
    if (nonce === undefined || !isWellFormedCsrfToken(nonce)) {
      nonce = newCsrfToken()
      reply.setCookie(PRESESSION_COOKIE, nonce, cookieOptions(request, this.policy))
      // A token for the nonce just set, should the same request render a form.
      request.cookies[PRESESSION_COOKIE] = nonce
    }
    return presessionToken(this.secret, nonce)
  }

  verify (request: FastifyRequest, given: unknown): boolean {
    const nonce = request.cookies[PRESESSION_COOKIE]
    return nonce !== undefined && isWellFormedCsrfToken(nonce) && tokensMatch(presessionToken(this.secret, nonce), given)
  }

  /** The nonce has served its purpose once a session exists. */
  clear (request: FastifyRequest, reply: FastifyReply): void {
    reply.clearCookie(PRESESSION_COOKIE, cookieOptions(request, this.policy))
  }
}

/** The synchronizer token check for the forms of a session. */
export function sessionCsrfValid (session: PortalSession, given: unknown): boolean {
  return tokensMatch(session.csrfToken, given)
}
