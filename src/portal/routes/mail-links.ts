import type { FastifyInstance, FastifyReply, FastifyRequest } from 'fastify'
import { controlCharacterProblem, normalizeEmail, withoutControlCharacters } from '../../core/accounts.js'
import { passwordProblem } from '../../core/passwords.js'
import { countResetUse, requestPasswordReset, resetPasswordWithLink, usableToken, verifyEmailWithLink, type LinkProblem } from '../../services/account-mail.js'
import { CSRF_FIELD } from '../csrf.js'
import { PasswordHasherBusyError } from '../password.js'
import { emailVerifiedPage, forgotPasswordPage, RESET_SENT, resetPasswordPage } from '../views/mail-links.js'
import { afterAnswer, field, FORM_EXPIRED, HIDDEN, sendErrorPage, sendPage, type PortalContext } from './context.js'

const LINK_PROBLEMS: Readonly<Record<LinkProblem, string>> = {
  malformed: 'This link is not complete or was changed. Open it exactly as it is in the message, or ask for a new one.',
  unknown: 'This link is not valid: it was changed, or a newer link replaced it. Use the newest message, or ask for a new one.',
  used: 'This link was used already: each link works once.',
  expired: 'This link has expired.'
}

const NEXT_STEP = {
  verify: 'Log in and send a new link from your keys page.',
  reset: 'Ask for a new one on the forgot-password page (/portal/forgot).'
} as const

/** A link that cannot be used: 400 when it is not even well formed, 410 when it was good once. */
function linkProblemPage (ctx: PortalContext, reply: FastifyReply, problem: LinkProblem, purpose: keyof typeof NEXT_STEP): FastifyReply {
  return sendErrorPage(ctx, reply, problem === 'malformed' ? 400 : 410, 'Link not valid', `${LINK_PROBLEMS[problem]} ${NEXT_STEP[purpose]}`)
}

const queryToken = (request: FastifyRequest): unknown => (request.query as Record<string, unknown>).token

/** The pages of mailed links (verify, reset) and the forgot-password form: anyone may open them, with or without a session. */
export async function mailLinkRoutes (app: FastifyInstance, ctx: PortalContext): Promise<void> {
  app.get('/verify', HIDDEN, async function verifyEmail (request, reply) {
    const result = await verifyEmailWithLink(ctx.store, queryToken(request), { actor: 'portal', address: request.ip })
    if ('problem' in result) return linkProblemPage(ctx, reply, result.problem, 'verify')
    request.log.info({ accountId: result.accountId }, 'portal: email verified')
    const session = await ctx.sessions.current(request)
    return sendPage(reply, 200, emailVerifiedPage({ assets: ctx.assets, session: session?.account.id === result.accountId ? session : undefined }))
  })
  app.get('/forgot', HIDDEN, async function showForgot (request, reply) {
    return sendPage(reply, 200, forgotPasswordPage({ assets: ctx.assets, csrfToken: ctx.presession.issue(request, reply) }))
  })
  app.post('/forgot', HIDDEN, async function submitForgot (request, reply) { return await forgot(ctx, request, reply) })
  app.get('/reset', HIDDEN, async function showReset (request, reply) {
    const found = await usableToken(ctx.store, queryToken(request), 'reset')
    if ('problem' in found) return linkProblemPage(ctx, reply, found.problem, 'reset')
    const account = await ctx.store.accounts.findById(found.token.accountId)
    if (account === undefined) return linkProblemPage(ctx, reply, 'unknown', 'reset')
    return sendPage(reply, 200, resetPasswordPage({ assets: ctx.assets, csrfToken: ctx.presession.issue(request, reply), token: String(queryToken(request)), email: account.email }))
  })
  app.post('/reset', HIDDEN, async function submitReset (request, reply) { return await reset(ctx, request, reply) })
}

async function forgot (ctx: PortalContext, request: FastifyRequest, reply: FastifyReply): Promise<FastifyReply> {
  const emailText = (field(request, 'email') ?? '').slice(0, 320)
  const render = (status: number, error?: string, notice?: string): FastifyReply =>
    sendPage(reply, status, forgotPasswordPage({ assets: ctx.assets, csrfToken: ctx.presession.issue(request, reply), email: withoutControlCharacters(emailText), error, notice }))
  if (!ctx.presession.verify(request, field(request, CSRF_FIELD))) return render(403, FORM_EXPIRED)
  const problem = controlCharacterProblem('email', emailText)
  if (problem !== undefined) return render(400, problem)
  const email = normalizeEmail(emailText)
  if (email === undefined) return render(400, 'Enter a valid email address, such as you@example.com.')
  const result = await requestPasswordReset(ctx.store, ctx.links, { email, ip: request.ip }, afterAnswer(request.log, 'writing a password reset link failed'))
  if (result.outcome === 'throttled') {
    reply.header('retry-after', String(result.retryAfterSeconds))
    return render(429, `Too many reset requests for this email address or from your network. Try again in ${Math.ceil(result.retryAfterSeconds / 60)} minutes.`)
  }
  return render(200, undefined, RESET_SENT)
}

async function reset (ctx: PortalContext, request: FastifyRequest, reply: FastifyReply): Promise<FastifyReply> {
  if (!ctx.presession.verify(request, field(request, CSRF_FIELD))) return sendErrorPage(ctx, reply, 403, 'Form expired', `${FORM_EXPIRED} Open the link in the message again.`)
  const tokenText = field(request, 'token')
  const found = await usableToken(ctx.store, tokenText, 'reset')
  if ('problem' in found) return linkProblemPage(ctx, reply, found.problem, 'reset')
  const account = await ctx.store.accounts.findById(found.token.accountId)
  if (account === undefined) return linkProblemPage(ctx, reply, 'unknown', 'reset')
  const password = field(request, 'password') ?? ''
  const render = (status: number, error: string): FastifyReply =>
    sendPage(reply, status, resetPasswordPage({ assets: ctx.assets, csrfToken: ctx.presession.issue(request, reply), token: String(tokenText), email: account.email, error }))
  const problem = controlCharacterProblem('password', password) ?? passwordProblem(password)
  if (problem !== undefined) return render(400, problem)
  const throttled = await countResetUse(ctx.store, request.ip, account.id)
  if (throttled !== undefined) {
    reply.header('retry-after', String(throttled.retryAfterSeconds))
    return render(429, `Too many new passwords set for this account or from your network. Try again in ${Math.ceil(throttled.retryAfterSeconds / 60)} minutes.`)
  }
  let passwordHash: string
  try {
    passwordHash = await ctx.hasher.forClient({ ip: request.ip, kind: 'sign-up' }, async (passwords) => await passwords.hash(password))
  } catch (error) {
    if (!(error instanceof PasswordHasherBusyError)) throw error
    reply.header('retry-after', String(error.retryAfterSeconds))
    return render(429, `The portal is busy. Try again in ${error.retryAfterSeconds} seconds.`)
  }
  const result = await resetPasswordWithLink(ctx.store, ctx.links, found.token, passwordHash, { actor: 'portal', address: request.ip })
  if ('problem' in result) return linkProblemPage(ctx, reply, result.problem, 'reset')
  request.log.info({ accountId: result.accountId, endedSessions: result.endedSessions }, 'portal: password reset')
  ctx.presession.clear(request, reply)
  return await reply.redirect('/portal/login?reset=1', 303)
}
