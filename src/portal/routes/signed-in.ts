import type { FastifyInstance, FastifyReply, FastifyRequest } from 'fastify'
import { CSRF_FIELD, sessionCsrfValid } from '../csrf.js'
import { cookieOptions, SESSION_COOKIE, type PortalSession } from '../session.js'
import { field, FORM_EXPIRED, sendErrorPage, type PortalContext } from './context.js'

declare module 'fastify' {
  interface FastifyRequest {
    /** The live session of a request to a page of the signed-in scope, set by its session hook. */
    portalSession: PortalSession | null
  }
}

/** The session the scope's hook found: every route of the scope runs only with one. */
export function sessionOf (request: FastifyRequest): PortalSession {
  const session = request.portalSession
  if (session === null) throw new Error(`${request.url} is served outside the signed-in scope`)
  return session
}

/**
 * The pages of a signed-in person, as one encapsulated scope (fastify/demo's autohooks): its
 * session hook sends a request without a live session to the log-in page, and its CSRF hook
 * refuses a form posted without the session's token, so no handler repeats either check.
 * Both are preHandler hooks, after the body is parsed and its fields checked, as before.
 */
export function signedInScope (ctx: PortalContext, areas: ReadonlyArray<(app: FastifyInstance, ctx: PortalContext) => Promise<void>>) {
  return async function signedIn (app: FastifyInstance): Promise<void> {
    app.decorateRequest('portalSession', null)
    app.addHook('preHandler', async function requireSession (request, reply) {
      const session = await ctx.sessions.current(request)
      if (session !== undefined) {
        request.portalSession = session
        return
      }
      return await redirectToLogIn(ctx, request, reply)
    })
    app.addHook('preHandler', async function requireSessionCsrf (request, reply) {
      if (request.method !== 'POST' || sessionCsrfValid(sessionOf(request), field(request, CSRF_FIELD))) return
      return sendErrorPage(ctx, reply, 403, 'Form expired', FORM_EXPIRED, sessionOf(request))
    })
    for (const area of areas) await app.register(area, ctx)
  }
}

/** To the log-in page, saying the session ended when a cookie came without a live one. */
async function redirectToLogIn (ctx: PortalContext, request: FastifyRequest, reply: FastifyReply): Promise<FastifyReply> {
  const ended = ctx.sessions.hasCookie(request)
  if (ended) reply.clearCookie(SESSION_COOKIE, cookieOptions(request, ctx.policy))
  return await reply.redirect(ended ? '/portal/login?ended=1' : '/portal/login', 303)
}
