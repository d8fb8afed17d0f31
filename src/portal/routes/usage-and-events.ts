import type { FastifyInstance, FastifyReply, FastifyRequest } from 'fastify'
import { keyUsageSince } from '../../services/accounts.js'
import { summarizeUsage } from '../usage-chart.js'
import { eventsPage, keyIdsInDetail } from '../views/events.js'
import { keyPage } from '../views/key-usage.js'
import { HIDDEN, noSuchKey, ownKey, sendPage, type PortalContext } from './context.js'
import { sessionOf } from './signed-in.js'

const EVENTS_PER_PAGE = 50
/** Days of usage a key's page shows, one bar each. */
const USAGE_DAYS = 30

/** A key's usage and the account's events (in the signed-in scope). */
export async function usageAndEventRoutes (app: FastifyInstance, ctx: PortalContext): Promise<void> {
  app.get<{ Params: { keyId: string } }>('/keys/:keyId', HIDDEN, async function showKey (request, reply) {
    const session = sessionOf(request)
    const key = await ownKey(ctx, session, request.params.keyId)
    if (key === undefined) return noSuchKey(ctx, reply, session)
    const now = Date.now()
    const [{ counts }, successor] = await Promise.all([
      keyUsageSince(ctx.store, key.id, USAGE_DAYS, now),
      key.rolledTo === null ? undefined : ownKey(ctx, session, key.rolledTo)
    ])
    return sendPage(reply, 200, keyPage({ assets: ctx.assets, session, key, successor, usage: summarizeUsage(counts, USAGE_DAYS, now), now }))
  })
  app.get('/events', HIDDEN, async function showEvents (request, reply) { return await events(ctx, request, reply) })
}

async function events (ctx: PortalContext, request: FastifyRequest, reply: FastifyReply): Promise<FastifyReply> {
  const session = sessionOf(request)
  const asked = (request.query as Record<string, unknown>).before
  const beforeId = typeof asked === 'string' && /^[1-9][0-9]{0,14}$/.test(asked) ? Number(asked) : undefined
  // One more than shown: whether there are older events, without counting them.
  const events = await ctx.store.audit.page(session.account.id, { limit: EVENTS_PER_PAGE + 1, beforeId })
  const shown = events.slice(0, EVENTS_PER_PAGE)
  const olderBefore = events.length > EVENTS_PER_PAGE ? shown[shown.length - 1]?.id : undefined
  const keyIds = new Set(shown.flatMap((event) => [...(event.keyId === null ? [] : [event.keyId]), ...keyIdsInDetail(event.detail)]))
  const found = await Promise.all([...keyIds].map(async (id) => await ownKey(ctx, session, id)))
  const keys = new Map(found.flatMap((key) => key === undefined ? [] : [[key.id, key] as const]))
  return sendPage(reply, 200, eventsPage({ assets: ctx.assets, session, events: shown, olderBefore, paged: beforeId !== undefined, keys }))
}
