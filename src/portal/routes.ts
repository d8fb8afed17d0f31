import { randomBytes } from 'node:crypto'
import cookie from '@fastify/cookie'
import formbody from '@fastify/formbody'
import type { FastifyError, FastifyInstance, FastifyReply, FastifyRequest } from 'fastify'
import { withoutControlCharacters } from '../core/accounts.js'
import { ApiError } from '../core/errors.js'
import type { ScryptParams } from '../core/passwords.js'
import type { MailLinks } from '../services/mail-messages.js'
import { StoreUnavailableError, type Store } from '../storage/store.js'
import { PresessionCsrf } from './csrf.js'
import { NewKeyCookie } from './new-key-cookie.js'
import { PasswordHasher } from './password.js'
import { SecondStepCookie } from './second-step-cookie.js'
import { logInCodeRoutes } from './routes/log-in-code.js'
import { sessionRoutes } from './routes/sessions.js'
import { twoStepRoutes } from './routes/two-step.js'
import { assetRoutes } from './routes/assets.js'
import { sendErrorPage, sendPage, type PortalContext } from './routes/context.js'
import { keyRoutes } from './routes/keys.js'
import { mailLinkRoutes } from './routes/mail-links.js'
import { signedInScope } from './routes/signed-in.js'
import { logOutRoute, signUpAndLogInRoutes } from './routes/sign-up-and-log-in.js'
import { usageAndEventRoutes } from './routes/usage-and-events.js'
import { Sessions } from './session.js'
import { errorPage } from './views/error.js'
import { loadAssets } from './web-assets.js'

export { WEB_ASSETS_DIR } from './web-assets.js'

export interface PortalOptions {
  store: Store
  /** PUBLIC_BASE_URL: the API base in the first-request snippet; https here makes cookies Secure. */
  publicBaseUrl: string | undefined
  /** Where mailed links point (mailLinksOf). */
  links: MailLinks
  sandbox: PortalContext['sandbox']
  /** What passwords are hashed and checked at (PASSWORD_HASH_COST). */
  passwordParams: Readonly<ScryptParams>
}

/** What every portal page is sent with; no inline script or style anywhere, so the CSP can forbid both. */
const PAGE_HEADERS: Readonly<Record<string, string>> = {
  'content-security-policy': "default-src 'self'; script-src 'self'; style-src 'self'; frame-ancestors 'none'; form-action 'self'; base-uri 'none'",
  'x-frame-options': 'DENY',
  'referrer-policy': 'no-referrer',
  'cross-origin-opener-policy': 'same-origin',
  'cross-origin-resource-policy': 'same-origin',
  'permissions-policy': 'camera=(), microphone=(), geolocation=(), payment=()'
}
const MAX_FORM_BYTES = 16 * 1024

/** The portal's own response headers, on every page it sends. */
function setPageHeaders (request: FastifyRequest, reply: FastifyReply): void {
  reply.headers(PAGE_HEADERS)
  // Pages, and above all the one that shows a new key, must never be kept by a cache.
  if (reply.getHeader('cache-control') === undefined) reply.header('cache-control', 'no-store')
  if (request.protocol === 'https') reply.header('strict-transport-security', 'max-age=31536000')
}

export function isUnderPortal (url: string): boolean {
  return /^\/portal(\/|$|\?)/.test(url)
}

/** A status the framework gives a request it could not read, with the statusCode the portal's error page looks at. */
function requestError (statusCode: number, message: string, code = 'PORTAL_UNREADABLE_FORM'): FastifyError {
  return Object.assign(new Error(message), { statusCode, code, name: 'FastifyError' }) as FastifyError
}

declare module 'fastify' {
  interface FastifyContextConfig {
    /** The form fields a route reads as a list (checkboxes); every other field must come once. */
    repeatableFields?: readonly string[]
  }
}

const REPEATED_FIELD = 'PORTAL_REPEATED_FIELD'

/**
 * The first field the form sends more than once that its route does not read as a list. A
 * browser sends a text field or a <select> once; a second value is a tampered form, and
 * picking either one (or neither) would act on something the person never chose.
 */
function repeatedField (body: unknown, repeatable: readonly string[]): string | undefined {
  if (typeof body !== 'object' || body === null) return undefined
  return Object.entries(body).find(([name, value]) => Array.isArray(value) && !repeatable.includes(name))?.[0]
}

/**
 * The error page for a /portal request that failed before reaching the portal's routes (a path
 * segment beyond the router's limit): the framework's own errors are the API's, in JSON, so the
 * application hands /portal's to this.
 */
export function sendPortalFrameworkError (error: FastifyError, request: FastifyRequest, reply: FastifyReply): FastifyReply {
  const { status, title, message } = describeError(error, request)
  setPageHeaders(request, reply)
  return sendPage(reply, status, errorPage({ assets: loadAssets().urls, status, title, message }))
}

/**
 * The developer portal under /portal: sign-up, log-in and the account's API keys, as
 * server-rendered pages. Not part of the API: no API key, no JSON errors, not in the
 * OpenAPI document. Cookies and form bodies are parsed here only, so the API keeps its
 * strict JSON body handling.
 */
export async function portalRoutes (app: FastifyInstance, options: PortalOptions): Promise<void> {
  await readFormsOnly(app)
  app.addHook('preHandler', async function refuseRepeatedFields (request) {
    const name = repeatedField(request.body, request.routeOptions.config.repeatableFields ?? [])
    if (name !== undefined) throw requestError(400, `The form sent the field “${withoutControlCharacters(name).slice(0, 40)}” more than once. Reload the page and send the form again.`, REPEATED_FIELD)
  })
  app.addHook('onSend', async function portalHeaders (request, reply, payload) {
    setPageHeaders(request, reply)
    return payload
  })

  const ctx = await portalContext(options)
  app.setNotFoundHandler(function portalNotFound (_request, reply) {
    return sendErrorPage(ctx, reply, 404, 'Page not found', 'There is no page at this address.')
  })
  // People read these errors: pages, not the API's JSON. Set before the areas are registered, which inherit it.
  app.setErrorHandler(function portalError (error: FastifyError | Error, request, reply) {
    const { status, title, message } = describeError(error, request)
    if (status === 503) reply.header('retry-after', '1')
    return sendErrorPage(ctx, reply, status, title, message)
  })

  await app.register(assetRoutes)
  await app.register(signUpAndLogInRoutes, ctx)
  await app.register(logInCodeRoutes, ctx)
  await app.register(mailLinkRoutes, ctx)
  await app.register(signedInScope(ctx, [logOutRoute, keyRoutes, usageAndEventRoutes, twoStepRoutes, sessionRoutes]))
}

/** Cookies, and form bodies as browsers send them: the API's JSON parser is inherited, and anything else is refused with 415. */
async function readFormsOnly (app: FastifyInstance): Promise<void> {
  await app.register(cookie)
  app.removeAllContentTypeParsers()
  await app.register(formbody, { bodyLimit: MAX_FORM_BYTES })
  app.addContentTypeParser('*', function refuseBody (request, payload, done) {
    payload.resume()
    done(requestError(415, `content type ${request.headers['content-type'] ?? '(none)'} is not a form`), undefined)
  })
  app.addHook('preParsing', async function refuseEncodedForms (request) {
    const encoding = request.headers['content-encoding']
    const hasBody = request.headers['content-length'] !== undefined || request.headers['transfer-encoding'] !== undefined
    if (hasBody && encoding !== undefined && encoding.trim().toLowerCase() !== 'identity') throw requestError(415, `content encoding ${encoding} is not read`)
  })
}

/** The sessions, the CSRF and new-key cookies' secrets (shared by every instance through the database) and the assets. */
async function portalContext ({ store, publicBaseUrl, links, sandbox, passwordParams }: PortalOptions): Promise<PortalContext> {
  const policy = { publicHttps: publicBaseUrl?.startsWith('https:') === true }
  const secret = async (name: string): Promise<string> => await store.setting(name, () => randomBytes(32).toString('base64url'))
  return {
    store,
    publicBaseUrl,
    links,
    sandbox,
    policy,
    sessions: new Sessions(store, policy),
    presession: new PresessionCsrf(await secret('portal_csrf_secret'), policy),
    devices: { secret: await secret('portal_device_secret') },
    newKeys: new NewKeyCookie(await secret('portal_new_key_secret'), policy),
    secondStep: new SecondStepCookie(await secret('portal_second_step_secret'), policy),
    totp: { secret: await secret('portal_totp_sealing_secret') },
    hasher: new PasswordHasher(passwordParams),
    assets: loadAssets().urls
  }
}

function describeError (error: FastifyError | Error, request: FastifyRequest): { status: number, title: string, message: string } {
  if (error instanceof StoreUnavailableError) {
    request.log.warn({ err: error.reason }, 'database unavailable')
    return { status: 503, title: 'Unavailable', message: 'The portal is briefly unavailable. Please try again in a moment.' }
  }
  if (error instanceof ApiError) {
    return error.status === 404
      ? { status: 404, title: 'Page not found', message: 'There is no page at this address.' }
      : { status: error.status, title: 'Request refused', message: error.message }
  }
  const status = (error as FastifyError).statusCode
  if (status === 413) return { status, title: 'Form too large', message: 'The form sent is too large.' }
  if ((error as FastifyError).code === REPEATED_FIELD) return { status: 400, title: 'Form refused', message: error.message }
  if (status === 415) return { status, title: 'Not a form', message: 'The portal reads forms as browsers send them (application/x-www-form-urlencoded, not compressed).' }
  if ((error as FastifyError).code === 'FST_ERR_MAX_PARAM_LENGTH') return { status: 404, title: 'Page not found', message: 'There is no page at this address.' }
  if (status === 503) return { status, title: 'Unavailable', message: 'The service is restarting. Please try again in a moment.' }
  if (status !== undefined && status >= 400 && status < 500) return { status, title: 'Bad request', message: 'The request could not be read.' }
  request.log.error({ err: error }, 'unexpected error in the developer portal')
  return { status: 500, title: 'Something went wrong', message: `Something went wrong on our side. Quote request id ${request.id} if you report it.` }
}
