import type { FastifyInstance, FastifyReply, FastifyRequest } from 'fastify'
import QRCode from 'qrcode'
import { controlCharacterProblem } from '../../core/accounts.js'
import { normalizedCode } from '../../core/two-step.js'
import type { PortalSession } from '../session.js'
import { checkCode, confirmSetup, pendingSetup, startSetup, turnOff } from '../two-step.js'
import { recoveryCodesPage, setupPage, twoStepPage } from '../views/two-step.js'
import { field, HIDDEN, sendPage, type PortalContext } from './context.js'
import { refusalOf } from './sign-up-and-log-in.js'
import { sessionOf } from './signed-in.js'

/** The code typed in a form, or why it cannot be one. */
function typedCode (request: FastifyRequest): { code: string } | { problem: string } {
  const typed = field(request, 'code') ?? ''
  const problem = controlCharacterProblem('code', typed)
  if (problem !== undefined) return { problem }
  const code = normalizedCode(typed)
  if (code === undefined) return { problem: 'That is too long to be a code: a code is six digits, a recovery code ten letters and digits.' }
  return code === '' ? { problem: 'Type the code your authenticator app shows.' } : { code }
}

/** The setup page of the pending secret, with its QR code as inline SVG: attributes only, nothing the CSP forbids. */
async function renderSetup (ctx: PortalContext, reply: FastifyReply, session: PortalSession, status: number, error?: string): Promise<FastifyReply> {
  const pending = await pendingSetup(ctx.store, ctx.totp, session.account)
  if (pending === undefined) return reply.redirect('/portal/two-step', 303)
  const qrSvg = (await QRCode.toString(pending.uri, { type: 'svg', margin: 2, errorCorrectionLevel: 'M' })).trim()
  return sendPage(reply, status, setupPage({ assets: ctx.assets, session, error, secret: pending.secret, qrSvg }))
}

async function renderState (ctx: PortalContext, reply: FastifyReply, session: PortalSession, status: number, messages: { error?: string, notice?: string } = {}): Promise<FastifyReply> {
  const row = await ctx.store.twoStep.find(session.account.id)
  const on = row?.enabledAt ?? undefined
  const recoveryCodesLeft = on === undefined ? 0 : (await ctx.store.twoStep.unusedRecoveryCodes(session.account.id)).length
  return sendPage(reply, status, twoStepPage({ assets: ctx.assets, session, on, recoveryCodesLeft, ...messages }))
}

const NOTICES: Readonly<Record<string, string>> = {
  off: 'Two-step verification is off. Your password alone now logs in to this account.',
  already: 'Two-step verification is already on.'
}

/** Turning two-step verification on and off, in the signed-in scope. */
export async function twoStepRoutes (app: FastifyInstance, ctx: PortalContext): Promise<void> {
  app.get('/two-step', HIDDEN, async function showTwoStep (request, reply) {
    const notice = NOTICES[String((request.query as Record<string, unknown>).done ?? '')]
    return await renderState(ctx, reply, sessionOf(request), 200, { notice })
  })
  app.post('/two-step/setup', HIDDEN, async function beginSetup (request, reply) {
    const started = await startSetup(ctx.store, ctx.totp, sessionOf(request).account)
    return reply.redirect(started === undefined ? '/portal/two-step?done=already' : '/portal/two-step/setup', 303)
  })
  app.get('/two-step/setup', HIDDEN, async function showSetup (request, reply) {
    return await renderSetup(ctx, reply, sessionOf(request), 200)
  })
  app.post('/two-step/confirm', HIDDEN, async function confirm (request, reply) {
    const session = sessionOf(request)
    const typed = typedCode(request)
    if ('problem' in typed) return await renderSetup(ctx, reply, session, 400, typed.problem)
    const result = await confirmSetup(ctx.store, ctx.totp, session.account, typed.code, { actor: 'portal', address: request.ip, links: ctx.links })
    if (result.outcome === 'no_setup') return reply.redirect('/portal/two-step', 303)
    if (result.outcome === 'wrong_code') return await renderSetup(ctx, reply, session, 400, 'That code is not correct. Type the code your app shows now; if it still fails, check the time on your phone.')
    request.log.info({ accountId: session.account.id }, 'two-step verification turned on')
    // Shown in the answer to the post itself: the page is no-store, and nothing can show the codes again.
    return sendPage(reply, 200, recoveryCodesPage({ assets: ctx.assets, session, codes: result.recoveryCodes }))
  })
  app.post('/two-step/disable', HIDDEN, async function disable (request, reply) { return await disableWith(ctx, request, reply) })
}

async function disableWith (ctx: PortalContext, request: FastifyRequest, reply: FastifyReply): Promise<FastifyReply> {
  const session = sessionOf(request)
  const typed = typedCode(request)
  if ('problem' in typed) return await renderState(ctx, reply, session, 400, { error: typed.problem })
  const result = await checkCode(ctx.store, ctx.hasher, ctx.totp, { accountId: session.account.id, code: typed.code, ip: request.ip })
  switch (result.outcome) {
    case 'throttled':
    case 'busy': {
      const { message, retryAfterSeconds } = refusalOf(result)
      reply.header('retry-after', String(retryAfterSeconds))
      return await renderState(ctx, reply, session, 429, { error: message })
    }
    case 'refused':
      return await renderState(ctx, reply, session, 400, { error: 'That code is not correct, or it has been used already. Two-step verification is still on.' })
    case 'not_on':
      return reply.redirect('/portal/two-step', 303)
    case 'ok':
      await turnOff(ctx.store, session.account, result.via, { actor: 'portal', address: request.ip, links: ctx.links })
      request.log.info({ accountId: session.account.id }, 'two-step verification turned off')
      return reply.redirect('/portal/two-step?done=off', 303)
  }
}
