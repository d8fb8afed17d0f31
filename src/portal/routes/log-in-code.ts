import type { FastifyInstance, FastifyReply, FastifyRequest } from 'fastify'
import { controlCharacterProblem } from '../../core/accounts.js'
import { normalizedCode } from '../../core/two-step.js'
import { appendAuditEvent } from '../../services/audit-trail.js'
import { CSRF_FIELD } from '../csrf.js'
import { checkCode } from '../two-step.js'
import { logInCodePage } from '../views/two-step.js'
import { field, FORM_EXPIRED, HIDDEN, sendPage, type PortalContext } from './context.js'
import { refuseEarly, startSession, type Render } from './sign-up-and-log-in.js'

const WRONG_CODE = 'That code is not correct, or it has been used already. Type the code your app shows now, or an unused recovery code.'
const STARTED_AGAIN = '/portal/login?ended=1'

/** The log-in's second step: the code after the password, for accounts with two-step verification on. */
export async function logInCodeRoutes (app: FastifyInstance, ctx: PortalContext): Promise<void> {
  app.get('/login/code', HIDDEN, async function showLogInCode (request, reply) {
    // Without a log-in half done (or once it is too old), there is nothing to type a code for.
    if (ctx.secondStep.read(request) === undefined) return reply.redirect('/portal/login', 303)
    return sendPage(reply, 200, logInCodePage({ assets: ctx.assets, csrfToken: ctx.presession.issue(request, reply) }))
  })
  app.post('/login/code', HIDDEN, async function submitLogInCode (request, reply) { return await logInWithCode(ctx, request, reply) })
}

async function logInWithCode (ctx: PortalContext, request: FastifyRequest, reply: FastifyReply): Promise<FastifyReply> {
  const render: Render = (status, error) => sendPage(reply, status, logInCodePage({ assets: ctx.assets, csrfToken: ctx.presession.issue(request, reply), error }))
  if (!ctx.presession.verify(request, field(request, CSRF_FIELD))) return render(403, FORM_EXPIRED)
  const pending = ctx.secondStep.read(request)
  if (pending === undefined) return reply.redirect(STARTED_AGAIN, 303)
  const typed = field(request, 'code') ?? ''
  const problem = controlCharacterProblem('code', typed)
  if (problem !== undefined) return render(400, problem)
  const code = normalizedCode(typed)
  if (code === undefined) return render(400, 'That is too long to be a code: a code is six digits, a recovery code ten letters and digits.')
  if (code === '') return render(400, 'Type the code your authenticator app shows.')
  const result = await checkCode(ctx.store, ctx.hasher, ctx.totp, { accountId: pending.accountId, code, ip: request.ip })
  const context = { actor: 'portal' as const, address: request.ip }
  switch (result.outcome) {
    case 'throttled':
    case 'busy':
      return refuseEarly(reply, render, result)
    case 'refused':
      await appendAuditEvent(ctx.store.audit, 'login_failed', context, { accountId: pending.accountId, detail: 'wrong two-step verification code' })
      return render(401, WRONG_CODE)
    case 'not_on':
      // Turned off meanwhile (by an operator): the password step decides again.
      ctx.secondStep.clear(request, reply)
      return reply.redirect(STARTED_AGAIN, 303)
    case 'ok':
      ctx.secondStep.clear(request, reply)
      await appendAuditEvent(ctx.store.audit, 'login_succeeded', context, {
        accountId: pending.accountId,
        detail: result.via === 'code' ? 'with a two-step verification code' : `with a recovery code (${result.recoveryCodesLeft} left)`
      })
      await startSession(ctx, request, reply, pending.accountId, pending.deviceCookie)
      request.log.info({ accountId: pending.accountId }, 'portal log-in')
      return reply.redirect('/portal/keys', 303)
  }
}
