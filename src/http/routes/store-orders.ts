import type { FastifyInstance } from 'fastify'
import { registerMethodFallbacks } from './method-fallbacks.js'
import { ApiError } from '../../core/errors.js'
import { errorResponses } from '../schemas/error.js'

export async function storeOrderRoutes (app: FastifyInstance): Promise<void> {
  app.get('/store/orders', {
    schema: {
      operationId: 'listStoreOrders',
      summary: 'List store orders (not implemented)',
      description: 'Named by the specification without any behaviour, fields or responses, so it always answers 501 not_implemented.',
      tags: ['store'],
      'x-stability': 'experimental',
      response: errorResponses(401, 501)
    }
  }, async function listStoreOrders () {
    throw new ApiError('not_implemented', 'store orders are not available in this version of the API')
  })
  registerMethodFallbacks(app, '/store/orders', ['GET'])
}
