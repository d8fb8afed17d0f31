import type { FastifyBaseLogger, FastifyReply, FastifyRequest } from 'fastify'
import { isWellFormedKeyId } from '../../core/api-keys.js'
import type { MailLinks } from '../../services/mail-messages.js'
import type { ApiKeyRow, Store } from '../../storage/store.js'
import type { PresessionCsrf } from '../csrf.js'
import type { NewKeyCookie } from '../new-key-cookie.js'
import type { PasswordHasher } from '../password.js'
import type { SecondStepCookie } from '../second-step-cookie.js'
import type { TotpSealing } from '../two-step.js'
import type { CookiePolicy, PortalSession, Sessions } from '../session.js'
import { errorPage } from '../views/error.js'
import type { AssetUrls } from '../views/layout.js'

/** What the portal's routes share: built once by portalRoutes, handed to each area's plugin. */
export interface PortalContext {
  store: Store
  /** PUBLIC_BASE_URL: the API base in the first-request snippet. */
  publicBaseUrl: string | undefined
  /** Where mailed links point. */
  links: MailLinks
  /** Every account's test data: a reset through it is seen by this instance at once. */
  sandbox: { reset: (accountId: number) => Promise<void>, readonly maxPets: number }
  policy: CookiePolicy
  sessions: Sessions
  presession: PresessionCsrf
  devices: { secret: string }
  newKeys: NewKeyCookie
  /** A log-in whose password was right, waiting for its code. */
  secondStep: SecondStepCookie
  totp: TotpSealing
  hasher: PasswordHasher
  assets: AssetUrls
}

/** Portal pages are not operations of the API: none is in the OpenAPI document. */
export const HIDDEN = { schema: { hide: true } } as const

/**
 * Runs work once the answer is on its way, its failure logged: what depends on whether an email has an
 * account is done there, so that neither the words nor the time of the answer tell.
 */
export function afterAnswer (log: FastifyBaseLogger, failure: string): (work: () => Promise<void>) => void {
  return (work) => {
    setImmediate(() => { work().catch((error: unknown) => { log.error({ err: error }, failure) }) })
  }
}

export const FORM_EXPIRED = 'This form has expired or was not sent from this site. Please try again.'

/** A single-valued form field (refuseRepeatedFields has refused a repeated one); anything but text counts as absent. */
export function field (request: FastifyRequest, name: string): string | undefined {
  const body = request.body
  if (typeof body !== 'object' || body === null) return undefined
  const value = (body as Record<string, unknown>)[name]
  return typeof value === 'string' ? value : undefined
}

/** Every value of a field that may repeat (checkboxes): none when absent, undefined when anything is not text. */
export function fieldValues (request: FastifyRequest, name: string): string[] | undefined {
  const body = request.body
  if (typeof body !== 'object' || body === null) return []
  const value = (body as Record<string, unknown>)[name]
  if (value === undefined) return []
  if (typeof value === 'string') return [value]
  return Array.isArray(value) && value.every((item) => typeof item === 'string') ? value as string[] : undefined
}

export function sendPage (reply: FastifyReply, status: number, body: string): FastifyReply {
  return reply.code(status).type('text/html; charset=utf-8').send(body)
}

/** The error page of a signed-in person (with the header's log-out form), or of anyone. */
export function sendErrorPage (ctx: PortalContext, reply: FastifyReply, status: number, title: string, message: string, session?: PortalSession): FastifyReply {
  return sendPage(reply, status, errorPage({ assets: ctx.assets, status, title, message, session }))
}

export const sentence = (text: string): string => text.charAt(0).toUpperCase() + text.slice(1) + (text.endsWith('.') ? '' : '.')

/** The key if it belongs to the session's account; any other key is answered exactly like a key that does not exist. */
export async function ownKey (ctx: PortalContext, session: PortalSession, keyId: string): Promise<ApiKeyRow | undefined> {
  if (!isWellFormedKeyId(keyId)) return undefined
  const key = await ctx.store.apiKeys.findById(keyId)
  return key?.accountId === session.account.id ? key : undefined
}

export const noSuchKey = (ctx: PortalContext, reply: FastifyReply, session: PortalSession): FastifyReply =>
  sendErrorPage(ctx, reply, 404, 'No such key', 'None of your keys has this id.', session)
