import type { FastifyInstance } from 'fastify'

/**
 * The bare address sends a newcomer to the reference page, which names the API, its document
 * and the portal where keys come from. A temporary redirect, so the address stays free for a
 * landing page of its own.
 */
export async function rootRoutes (app: FastifyInstance): Promise<void> {
  app.get('/', { schema: { hide: true } }, async function redirectToReference (_request, reply) {
    return reply.redirect('/docs', 302)
  })
}
