import type { FastifyInstance, FastifyReply, FastifyRequest } from 'fastify'
import { controlCharacterProblem, normalizeEmail, withoutControlCharacters } from '../../core/accounts.js'
import type { ThrottledBy } from '../../core/login-throttle.js'
import { CSRF_FIELD } from '../csrf.js'
import { logIn, signUp, type Busy, type Throttled } from '../log-in.js'
import { DEVICE_COOKIE, deviceCookieOptions } from '../session.js'
import { checkEmailPage, logInPage, signUpPage } from '../views/credentials.js'
import { afterAnswer, field, FORM_EXPIRED, HIDDEN, sendPage, type PortalContext } from './context.js'
import { sessionOf } from './signed-in.js'

/** A wait as people say it: seconds under two minutes, minutes beyond. */
const duration = (seconds: number): string => {
  if (seconds < 120) return `${seconds} second${seconds === 1 ? '' : 's'}`
  const count = Math.ceil(seconds / 60)
  return `${count} minutes`
}

const THROTTLED_BY: Readonly<Record<ThrottledBy, string>> = {
  address: 'Too many attempts from your network.',
  pair: 'Too many failed log-ins for this account from your network.',
  device: 'Too many failed log-ins from this browser.',
  account: 'Too many failed log-ins for this account from browsers it has not logged in with before. A browser you have logged in with before is not held back.',
  code: 'Too many codes tried for this account.'
}

const BUSY: Readonly<Record<Busy['reason'], string>> = {
  client: 'Another log-in or sign-up from your network is being checked.',
  early: 'The portal is busy, and your network tried again before its wait ended: each early try makes the wait longer.',
  full: 'The portal is checking many passwords right now.'
}

/** What a log-in or sign-up refused before its password was checked says, with its Retry-After. */
export function refusalOf (result: Throttled | Busy): { message: string, retryAfterSeconds: number } {
  const wait = `Try again in ${duration(result.retryAfterSeconds)}.`
  if (result.outcome === 'throttled') return { message: `${THROTTLED_BY[result.by]} ${wait}`, retryAfterSeconds: result.retryAfterSeconds }
  return { message: `${BUSY[result.reason]} ${wait}`, retryAfterSeconds: result.retryAfterSeconds }
}

/** Sign-up and log-in: the pages anyone may open, before a session exists. */
/** What the log-in page says after the redirect that names one of these query parameters. */
const LOG_IN_NOTICES: Readonly<Record<string, string>> = {
  logged_out: 'You have logged out.',
  everywhere: 'You have signed out everywhere: every session of your account has ended.',
  ended: 'Your session has ended. Please log in again.',
  reset: 'Your new password is set, and every session of the account was signed out. Log in with the new password.'
}

export async function signUpAndLogInRoutes (app: FastifyInstance, ctx: PortalContext): Promise<void> {
  app.get('/', HIDDEN, async function portalHome (request, reply) {
    return reply.redirect(await ctx.sessions.current(request) === undefined ? '/portal/login' : '/portal/keys', 303)
  })
  app.get('/login', HIDDEN, async function showLogIn (request, reply) {
    if (await ctx.sessions.current(request) !== undefined) return reply.redirect('/portal/keys', 303)
    const query = request.query as Record<string, unknown>
    const notice = Object.entries(LOG_IN_NOTICES).find(([name]) => query[name] !== undefined)?.[1]
    return sendPage(reply, 200, logInPage({ assets: ctx.assets, csrfToken: ctx.presession.issue(request, reply), notice }))
  })
  app.post('/login', HIDDEN, async function submitLogIn (request, reply) { return await logInWith(ctx, request, reply) })
  app.get('/signup', HIDDEN, async function showSignUp (request, reply) {
    if (await ctx.sessions.current(request) !== undefined) return reply.redirect('/portal/keys', 303)
    return sendPage(reply, 200, signUpPage({ assets: ctx.assets, csrfToken: ctx.presession.issue(request, reply) }))
  })
  app.post('/signup', HIDDEN, async function submitSignUp (request, reply) { return await signUpWith(ctx, request, reply) })
}

/** Log-out, in the signed-in scope: its hooks have found the session and checked the form's token. */
export async function logOutRoute (app: FastifyInstance, ctx: PortalContext): Promise<void> {
  app.post('/logout', HIDDEN, async function submitLogOut (request, reply) {
    await ctx.sessions.end(request, reply, sessionOf(request))
    return reply.redirect('/portal/login?logged_out=1', 303)
  })
}

export type Render = (status: number, error: string) => FastifyReply
type Credentials = { refused: FastifyReply } | { refused?: undefined, email: string | undefined, password: string, render: Render }

/** The form's email and password, or the page that says what is wrong with them; the presession token checked first. */
function credentials (ctx: PortalContext, request: FastifyRequest, reply: FastifyReply, form: typeof logInPage): Credentials {
  const emailText = (field(request, 'email') ?? '').slice(0, 320)
  const render: Render = (status, error) =>
    sendPage(reply, status, form({ assets: ctx.assets, csrfToken: ctx.presession.issue(request, reply), email: withoutControlCharacters(emailText), error }))
  if (!ctx.presession.verify(request, field(request, CSRF_FIELD))) return { refused: render(403, FORM_EXPIRED) }
  const password = field(request, 'password') ?? ''
  const problem = controlCharacterProblem('email', emailText) ?? controlCharacterProblem('password', password)
  if (problem !== undefined) return { refused: render(400, problem) }
  return { email: normalizeEmail(emailText), password, render }
}

/** A log-in or sign-up refused before its password was checked: 429 with its Retry-After. */
export function refuseEarly (reply: FastifyReply, render: Render, result: Throttled | Busy): FastifyReply {
  const { message, retryAfterSeconds } = refusalOf(result)
  reply.header('retry-after', String(retryAfterSeconds))
  return render(429, message)
}

/** The session, the device cookie and the presession nonce's end, once an account is in. */
export async function startSession (ctx: PortalContext, request: FastifyRequest, reply: FastifyReply, accountId: number, deviceCookie: string): Promise<void> {
  await ctx.sessions.start(request, reply, accountId)
  reply.setCookie(DEVICE_COOKIE, deviceCookie, deviceCookieOptions(request, ctx.policy))
  ctx.presession.clear(request, reply)
}

async function logInWith (ctx: PortalContext, request: FastifyRequest, reply: FastifyReply): Promise<FastifyReply> {
  const form = credentials(ctx, request, reply, logInPage)
  if (form.refused !== undefined) return form.refused
  const { email, password, render } = form
  if (email === undefined || password === '') return render(400, 'Enter your email address and your password.')
  const result = await logIn(ctx.store, ctx.hasher, ctx.devices, { email, password, ip: request.ip, deviceCookie: request.cookies[DEVICE_COOKIE] })
  if (result.outcome === 'throttled' || result.outcome === 'busy') return refuseEarly(reply, render, result)
  // One message for an unknown email, an account without a password and a wrong password.
  if (result.outcome === 'refused') return render(401, 'The email address or the password is not correct.')
  if (result.outcome === 'second_step') {
    ctx.secondStep.put(request, reply, { accountId: result.accountId, deviceCookie: result.deviceCookie })
    return reply.redirect('/portal/login/code', 303)
  }
  await startSession(ctx, request, reply, result.accountId, result.deviceCookie)
  request.log.info({ accountId: result.accountId }, 'portal log-in')
  return reply.redirect('/portal/keys', 303)
}

async function signUpWith (ctx: PortalContext, request: FastifyRequest, reply: FastifyReply): Promise<FastifyReply> {
  const form = credentials(ctx, request, reply, signUpPage)
  if (form.refused !== undefined) return form.refused
  const { email, password, render } = form
  if (email === undefined) return render(400, 'Enter a valid email address, such as you@example.com.')
  const later = afterAnswer(request.log, 'a portal sign-up failed after its answer')
  const result = await signUp(ctx.store, ctx.hasher, ctx.links, { email, password, ip: request.ip }, later)
  switch (result.outcome) {
    case 'invalid_password':
      return render(400, result.message)
    case 'throttled':
    case 'busy':
      return refuseEarly(reply, render, result)
    case 'accepted':
      // The same page for an email with an account and a new one: the message says which it was.
      ctx.presession.clear(request, reply)
      return sendPage(reply, 200, checkEmailPage({ assets: ctx.assets, email }))
  }
}
