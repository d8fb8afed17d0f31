import type { FastifyInstance } from 'fastify'
import { loadAssets } from '../web-assets.js'
import { HIDDEN } from './context.js'

/** The stylesheet, the script and the icon: cached for a day, since their URLs change with their content. */
export async function assetRoutes (app: FastifyInstance): Promise<void> {
  for (const asset of Object.values(loadAssets().files)) {
    app.get(asset.path, HIDDEN, async function portalAsset (_request, reply) {
      return reply.type(asset.type).header('cache-control', 'public, max-age=86400').send(asset.body)
    })
  }
}
