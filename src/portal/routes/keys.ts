import type { FastifyInstance, FastifyReply, FastifyRequest } from 'fastify'
import { withoutControlCharacters } from '../../core/accounts.js'
import { isKeyMode, MAX_LIVE_KEYS, SCOPES, type KeyMode } from '../../core/api-keys.js'
import {
  AccountsError,
  durationOrFail,
  expiryOrFail,
  issueApiKey,
  KeyChangeRateError,
  keyLabelOrFail,
  LiveKeyLimitError,
  revokeOwnApiKey,
  resetSandbox,
  rollApiKey,
  scopesOrFail
} from '../../services/accounts.js'
import { resendVerification } from '../../services/account-mail.js'
import type { ApiKeyRow } from '../../storage/store.js'
import { choiceProblem, DEFAULT_EXPIRY_CHOICE, DEFAULT_GRACE_CHOICE, EXPIRY_CHOICES, GRACE_CHOICES, isOffered } from '../choices.js'
import type { PortalSession } from '../session.js'
import { revokePage, rollPage, sandboxResetPage } from '../views/key-changes.js'
import { keysPage, revokedKeysPage, type KeyFormState } from '../views/keys.js'
import { field, fieldValues, HIDDEN, noSuchKey, ownKey, sendErrorPage, sendPage, sentence, type PortalContext } from './context.js'
import { sessionOf } from './signed-in.js'

/** Revoked keys shown under the live ones; the rest are a link away, a page at a time. */
const REVOKED_ON_KEYS_PAGE = 10
const REVOKED_PER_PAGE = 50
const HOST = /^[A-Za-z0-9.-]+(:[0-9]{1,5})?$|^\[[0-9A-Fa-f:.]+\](:[0-9]{1,5})?$/

type KeyRequest = FastifyRequest<{ Params: { keyId: string } }>

/** The account's keys: the list, generating, revoking and rolling (in the signed-in scope). */
export async function keyRoutes (app: FastifyInstance, ctx: PortalContext): Promise<void> {
  app.get('/keys', HIDDEN, async function showKeys (request, reply) { return await keysWithNotice(ctx, request, reply) })
  app.get('/keys/revoked', HIDDEN, async function showRevokedKeys (request, reply) { return await revokedKeys(ctx, request, reply) })
  app.post('/keys', { ...HIDDEN, config: { repeatableFields: ['scopes'] } }, async function generateKey (request, reply) {
    return await generate(ctx, request, reply)
  })
  app.get<{ Params: { keyId: string } }>('/keys/:keyId/revoke', HIDDEN, async function confirmRevokeKey (request, reply) {
    const session = sessionOf(request)
    const key = await ownKey(ctx, session, request.params.keyId)
    if (key === undefined) return noSuchKey(ctx, reply, session)
    if (!key.live) return reply.redirect(`/portal/keys?revoked=${key.id}`, 303)
    return sendPage(reply, 200, revokePage({ assets: ctx.assets, session, key }))
  })
  app.post<{ Params: { keyId: string } }>('/keys/:keyId/revoke', HIDDEN, async function revokeKey (request, reply) { return await revoke(ctx, request, reply) })
  app.get<{ Params: { keyId: string } }>('/keys/:keyId/roll', HIDDEN, async function confirmRollKey (request, reply) {
    const rollable = await rollableKey(ctx, request, reply)
    if (!('key' in rollable)) return rollable
    return sendPage(reply, 200, rollPage({ assets: ctx.assets, session: rollable.session, key: rollable.key }))
  })
  app.post<{ Params: { keyId: string } }>('/keys/:keyId/roll', HIDDEN, async function rollKey (request, reply) { return await roll(ctx, request, reply) })
  app.post('/keys/verification', HIDDEN, async function resendVerificationLink (request, reply) {
    const session = sessionOf(request)
    const result = await resendVerification(ctx.store, ctx.links, session.account, { actor: 'portal', address: request.ip })
    if (result.outcome === 'throttled') {
      reply.header('retry-after', String(result.retryAfterSeconds))
      return sendErrorPage(ctx, reply, 429, 'Too many links', `We have sent several links in the last hour. Use the newest message, or try again in ${Math.ceil(result.retryAfterSeconds / 60)} minutes.`, session)
    }
    return await reply.redirect(`/portal/keys?verification=${result.outcome}`, 303)
  })
  app.get('/sandbox/reset', HIDDEN, async function confirmSandboxReset (request, reply) {
    return sendPage(reply, 200, sandboxResetPage({ assets: ctx.assets, session: sessionOf(request) }))
  })
  app.post('/sandbox/reset', HIDDEN, async function resetTestData (request, reply) {
    const session = sessionOf(request)
    // Through this instance's sandbox, which forgets the old data at once; the others follow the store's feed of resets.
    await resetSandbox(ctx.store, session.account.id, { actor: 'portal', address: request.ip }, ctx.sandbox)
    request.log.info({ accountId: session.account.id }, 'portal: test data reset')
    return await reply.redirect('/portal/keys?sandbox=reset', 303)
  })
}

/** An account whose email is not verified may look at its keys but not make new ones: the page that says why. */
function unverified (ctx: PortalContext, reply: FastifyReply, session: PortalSession): FastifyReply | undefined {
  if (session.account.emailVerifiedAt !== null) return undefined
  return sendErrorPage(ctx, reply, 403, 'Verify your email first', `Follow the link we mailed to ${session.account.email} before generating or rolling keys. The keys page can send it again.`, session)
}

/** The mode the form chose; `fallback` when it chose none, a message for anything else. */
function modeOf (request: FastifyRequest, fallback: KeyMode = 'live'): KeyMode | { problem: string } {
  const text = field(request, 'mode') ?? fallback
  return isKeyMode(text) ? text : { problem: 'Choose whether the key is live or test.' }
}

interface KeysPageExtras {
  created?: { key: string, row: ApiKeyRow, replaces?: ApiKeyRow }
  error?: string
  notice?: string | undefined
  label?: string
  form?: KeyFormState
}

function apiBaseUrl (ctx: PortalContext, request: FastifyRequest): string {
  if (ctx.publicBaseUrl !== undefined) return ctx.publicBaseUrl
  const host = HOST.test(request.host) ? request.host : 'localhost:8080'
  return `${request.protocol}://${host}/v1`
}

async function renderKeys (ctx: PortalContext, request: FastifyRequest, reply: FastifyReply, status: number, extras: KeysPageExtras): Promise<FastifyReply> {
  const session = sessionOf(request)
  const live = await ctx.store.apiKeys.pageByAccount(session.account.id, { live: true, limit: MAX_LIVE_KEYS, offset: 0 })
  const revoked = await ctx.store.apiKeys.pageByAccount(session.account.id, { live: false, limit: REVOKED_ON_KEYS_PAGE, offset: 0 })
  return sendPage(reply, status, keysPage({
    assets: ctx.assets, session, live: live.rows, revoked: revoked.rows, revokedTotal: revoked.total, apiBaseUrl: apiBaseUrl(ctx, request), sandboxMaxPets: ctx.sandbox.maxPets, ...extras
  }))
}

async function keysWithNotice (ctx: PortalContext, request: FastifyRequest, reply: FastifyReply): Promise<FastifyReply> {
  const session = sessionOf(request)
  const { revoked, created, verification, sandbox } = request.query as Record<string, unknown>
  if (verification === 'sent') return await renderKeys(ctx, request, reply, 200, { notice: `A new link is on its way to ${session.account.email}. Earlier links no longer work.` })
  if (typeof created === 'string') return await renderKeys(ctx, request, reply, 200, await createdKeyExtras(ctx, request, reply, session, created))
  ctx.newKeys.take(request, reply)
  const key = typeof revoked === 'string' ? await ownKey(ctx, session, revoked) : undefined
  const notice = sandbox === 'reset'
    ? 'Your test data was reset: your sandbox holds the demo animals again.'
    : key === undefined || key.live
      ? undefined
      : key.revokedAt === null
        ? `The key ${key.label ?? key.prefix} has expired: the API refuses it.`
        : `The key ${key.label ?? key.prefix} has been revoked: the API refuses it from now on.`
  return await renderKeys(ctx, request, reply, 200, { notice })
}

/** What the page after a roll says about the key it replaced. */
const rolledNotice = (old: ApiKeyRow): string => old.live && old.expiresAt !== null
  ? `The key ${old.label ?? old.prefix} was rolled: it keeps working until ${old.expiresAt.toISOString().slice(0, 16).replace('T', ' ')} UTC, then the API refuses it. Move your programs to the new key before then.`
  : `The key ${old.label ?? old.prefix} was rolled: the API refuses it from now on.`

/** What the redirect after a generation or a roll shows: the secret the first time, a notice that it was shown after that. */
async function createdKeyExtras (ctx: PortalContext, request: FastifyRequest, reply: FastifyReply, session: PortalSession, keyId: string): Promise<KeysPageExtras> {
  const handed = ctx.newKeys.take(request, reply)
  const row = await ownKey(ctx, session, keyId)
  if (row === undefined) return {}
  if (handed?.keyId !== row.id) {
    return { notice: `The key ${row.label ?? row.prefix} was shown once, right after it was made, and cannot be shown again. If you did not copy it, revoke it and generate a new one.` }
  }
  const replaces = handed.replacesId === undefined ? undefined : await ownKey(ctx, session, handed.replacesId)
  return { created: { key: handed.key, row, ...(replaces === undefined ? {} : { replaces }) }, notice: replaces === undefined ? undefined : rolledNotice(replaces) }
}

async function revokedKeys (ctx: PortalContext, request: FastifyRequest, reply: FastifyReply): Promise<FastifyReply> {
  const session = sessionOf(request)
  const asked = (request.query as Record<string, unknown>).page
  const page = typeof asked === 'string' && /^[1-9][0-9]{0,5}$/.test(asked) ? Number(asked) : 1
  const revoked = await ctx.store.apiKeys.pageByAccount(session.account.id, { live: false, limit: REVOKED_PER_PAGE, offset: (page - 1) * REVOKED_PER_PAGE })
  const pages = Math.max(1, Math.ceil(revoked.total / REVOKED_PER_PAGE))
  if (page > pages) return await reply.redirect(`/portal/keys/revoked?page=${pages}`, 303)
  return sendPage(reply, 200, revokedKeysPage({ assets: ctx.assets, session, keys: revoked.rows, total: revoked.total, page, pages }))
}

/** A refused key change: 429 with its Retry-After, or the limit of live keys, or another rule the form broke. */
type ChangeRefusal = { status: 429, error: string } | { status: 400, error: string, limit?: number }

function changeRefusal (reply: FastifyReply, error: unknown): ChangeRefusal | undefined {
  if (error instanceof KeyChangeRateError) {
    reply.header('retry-after', String(error.retryAfterSeconds))
    return { status: 429, error: sentence(error.message) }
  }
  if (error instanceof LiveKeyLimitError) return { status: 400, error: sentence(error.message), limit: error.limit }
  if (error instanceof AccountsError) return { status: 400, error: sentence(error.message) }
  return undefined
}

async function generate (ctx: PortalContext, request: FastifyRequest, reply: FastifyReply): Promise<FastifyReply> {
  const session = sessionOf(request)
  const refused = unverified(ctx, reply, session)
  if (refused !== undefined) return refused
  const labelText = field(request, 'label') ?? ''
  const scopeTexts = fieldValues(request, 'scopes')
  const expiryText = field(request, 'expires_in') ?? DEFAULT_EXPIRY_CHOICE
  const mode = modeOf(request)
  // The form as it was sent, for the page that says what is wrong with it: known choices only.
  const form: KeyFormState = {
    scopes: (scopeTexts ?? []).filter((scope) => SCOPES.some((known) => known === scope)),
    expiresIn: isOffered(EXPIRY_CHOICES, expiryText) ? expiryText : DEFAULT_EXPIRY_CHOICE,
    ...(typeof mode === 'string' && { mode })
  }
  const refuse = (status: number, error: string): Promise<FastifyReply> =>
    renderKeys(ctx, request, reply, status, { error, label: withoutControlCharacters(labelText).slice(0, 500), form })
  let created: { key: string, row: ApiKeyRow }
  try {
    const label = keyLabelOrFail(labelText)
    if (scopeTexts === undefined || scopeTexts.length === 0) {
      return await refuse(400, 'Choose at least one scope: animals:read to list and read animals, animals:write to add them.')
    }
    // Each value checked on its own, so a control character is named as such, never split away.
    for (const scope of scopeTexts) scopesOrFail(scope)
    const scopes = scopesOrFail(scopeTexts.join(' '))
    const expiryRefusal = choiceProblem(EXPIRY_CHOICES, expiryText, 'when the key expires')
    if (expiryRefusal !== undefined) return await refuse(400, expiryRefusal)
    const expiresAt = expiryText === 'never' ? null : expiryOrFail({ expiresIn: expiryText })
    if (typeof mode !== 'string') return await refuse(400, mode.problem)
    created = await issueApiKey(ctx.store, session.account.id, label, { scopes, expiresAt, mode }, { actor: 'portal', address: request.ip, links: ctx.links })
  } catch (error) {
    const refusal = changeRefusal(reply, error)
    if (refusal === undefined) throw error
    if (refusal.status === 400 && refusal.limit !== undefined) {
      return await refuse(400, `You have ${refusal.limit} active keys, the most an account may have (a rolled key counts until its grace period ends). Revoke one you no longer use first.`)
    }
    return await refuse(refusal.status, refusal.error)
  }
  request.log.info({ accountId: session.account.id, keyId: created.row.id }, 'portal: API key generated')
  // Post-redirect-get: the page that shows the secret once (no-store, like every portal page) can be reloaded without posting again.
  ctx.newKeys.put(request, reply, { key: created.key, keyId: created.row.id })
  return await reply.redirect(`/portal/keys?created=${created.row.id}`, 303)
}

async function revoke (ctx: PortalContext, request: KeyRequest, reply: FastifyReply): Promise<FastifyReply> {
  const session = sessionOf(request)
  const key = await ownKey(ctx, session, request.params.keyId)
  if (key === undefined) return noSuchKey(ctx, reply, session)
  try {
    // Records the key's invalidation: every instance drops it within a second.
    await revokeOwnApiKey(ctx.store, key, { actor: 'portal', address: request.ip })
  } catch (error) {
    if (!(error instanceof KeyChangeRateError)) throw error
    reply.header('retry-after', String(error.retryAfterSeconds))
    return sendErrorPage(ctx, reply, 429, 'Too many revocations', `${sentence(error.message)} An operator can revoke it at once with animal-store keys revoke ${key.id}.`, session)
  }
  request.log.info({ accountId: session.account.id, keyId: key.id }, 'portal: API key revoked')
  return await reply.redirect(`/portal/keys?revoked=${key.id}`, 303)
}

/** Why a key cannot be rolled, or undefined when it can. */
const notRollable = (key: ApiKeyRow): string | undefined => {
  if (!key.live) return `The key ${key.label ?? key.prefix} has ${key.revokedAt === null ? 'expired' : 'been revoked'}: there is nothing to roll. Generate a new key instead.`
  if (key.rolledTo !== null) return `The key ${key.label ?? key.prefix} has been rolled already and works only until its grace period ends. Roll the key that replaced it instead.`
  return undefined
}

/** The signed-in account's key named in the path when it may be rolled now; otherwise the page that says why not. */
async function rollableKey (ctx: PortalContext, request: KeyRequest, reply: FastifyReply): Promise<{ session: PortalSession, key: ApiKeyRow } | FastifyReply> {
  const session = sessionOf(request)
  const key = await ownKey(ctx, session, request.params.keyId)
  if (key === undefined) return noSuchKey(ctx, reply, session)
  const refused = unverified(ctx, reply, session)
  if (refused !== undefined) return refused
  const refusal = notRollable(key)
  if (refusal !== undefined) return sendErrorPage(ctx, reply, 409, 'Cannot roll this key', refusal, session)
  return { session, key }
}

async function roll (ctx: PortalContext, request: KeyRequest, reply: FastifyReply): Promise<FastifyReply> {
  const rollable = await rollableKey(ctx, request, reply)
  if (!('key' in rollable)) return rollable
  const { session, key } = rollable
  const graceText = field(request, 'grace') ?? DEFAULT_GRACE_CHOICE
  const shownGrace = isOffered(GRACE_CHOICES, graceText) ? graceText : DEFAULT_GRACE_CHOICE
  const refuse = (error: string): FastifyReply => sendPage(reply, 400, rollPage({ assets: ctx.assets, session, key, grace: shownGrace, error }))
  const graceRefusal = choiceProblem(GRACE_CHOICES, graceText, 'how long the old key keeps working')
  if (graceRefusal !== undefined) return refuse(graceRefusal)
  const mode = modeOf(request, key.mode)
  if (typeof mode !== 'string') return refuse(mode.problem)
  let rolled: { key: string, row: ApiKeyRow, old: ApiKeyRow }
  try {
    const graceMs = durationOrFail(graceText, 'the grace period')
    rolled = await rollApiKey(ctx.store, key.id, { graceMs, ownerId: session.account.id, mode }, { actor: 'portal', address: request.ip, links: ctx.links })
  } catch (error) {
    const change = changeRefusal(reply, error)
    if (change === undefined) throw error
    if (change.status === 429) return sendErrorPage(ctx, reply, 429, 'Too many new keys', change.error, session)
    if (change.limit !== undefined) {
      return refuse(`You have ${change.limit} active keys, the most an account may have, and rolling needs room for the new key: a rolled key counts ` +
        'until its grace period ends, even a grace period of none. Revoke a key you no longer use first, then roll this one.')
    }
    return refuse(change.error)
  }
  request.log.info({ accountId: session.account.id, keyId: rolled.row.id, rolledKeyId: key.id }, 'portal: API key rolled')
  // Like a generated key: redirected to the page that shows the secret once.
  ctx.newKeys.put(request, reply, { key: rolled.key, keyId: rolled.row.id, replacesId: key.id })
  return await reply.redirect(`/portal/keys?created=${rolled.row.id}`, 303)
}
