import type { FastifyInstance } from 'fastify'
import { isWellFormedSessionHandle, sessionHandle } from '../../core/sessions.js'
import { appendAuditEvent } from '../../services/audit-trail.js'
import { cookieOptions, SESSION_COOKIE } from '../session.js'
import { sessionsPage } from '../views/sessions.js'
import { field, HIDDEN, sendErrorPage, sendPage, type PortalContext } from './context.js'
import { sessionOf } from './signed-in.js'

/** The account's sessions: the list, signing one out, and signing out everywhere (every form checked by the scope's CSRF hook). */
export async function sessionRoutes (app: FastifyInstance, ctx: PortalContext): Promise<void> {
  app.get('/sessions', HIDDEN, async function showSessions (request, reply) {
    const session = sessionOf(request)
    const sessions = await ctx.store.sessions.listByAccount(session.account.id, new Date())
    const notice = (request.query as Record<string, unknown>).ended !== undefined ? 'The session is signed out.' : undefined
    return sendPage(reply, 200, sessionsPage({ assets: ctx.assets, session, sessions, notice }))
  })

  app.post('/sessions/end', HIDDEN, async function endSession (request, reply) {
    const session = sessionOf(request)
    const handle = field(request, 'session') ?? ''
    // Only the account's own sessions are looked among: another account's handle is no different from a made-up one.
    const target = isWellFormedSessionHandle(handle)
      ? (await ctx.store.sessions.listByAccount(session.account.id, new Date())).find((row) => sessionHandle(row.tokenHash) === handle)
      : undefined
    if (target === undefined) return sendErrorPage(ctx, reply, 404, 'No such session', 'None of your sessions has this id: it may have ended already.', session)
    await ctx.store.sessions.delete(target.tokenHash)
    await appendAuditEvent(ctx.store.audit, 'sessions_ended', { actor: 'portal', address: request.ip }, { accountId: session.account.id, detail: 'one session signed out' })
    if (target.tokenHash !== session.tokenHash) return reply.redirect('/portal/sessions?ended=1', 303)
    reply.clearCookie(SESSION_COOKIE, cookieOptions(request, ctx.policy))
    return reply.redirect('/portal/login?logged_out=1', 303)
  })

  app.post('/sessions/end-all', HIDDEN, async function endAllSessions (request, reply) {
    const session = sessionOf(request)
    const ended = await ctx.store.sessions.deleteByAccount(session.account.id)
    await appendAuditEvent(ctx.store.audit, 'sessions_ended', { actor: 'portal', address: request.ip }, {
      accountId: session.account.id, detail: `signed out everywhere (${ended} session${ended === 1 ? '' : 's'})`
    })
    reply.clearCookie(SESSION_COOKIE, cookieOptions(request, ctx.policy))
    return reply.redirect('/portal/login?everywhere=1', 303)
  })
}
