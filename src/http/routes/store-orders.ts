import { errors } from '../../core/errors.js'
import type { Operation } from '../operation.js'
import { errorResponses, example, keyedResponses, type ErrorExamples } from '../schemas/error.js'

const NOT_IMPLEMENTED: ErrorExamples = {
  notImplemented: example('Always', errors.storeOrdersNotImplemented())
}

/** listStoreOrders: named by the specification without any behaviour, so it always answers 501. */
export function storeOrderOperations (): Operation[] {
  return [{
    operationId: 'listStoreOrders',
    method: 'GET',
    url: '/store/orders',
    schema: {
      operationId: 'listStoreOrders',
      summary: 'List store orders (not implemented)',
      description: 'Named by the specification without any behaviour, fields or responses, so it always answers 501 not_implemented.',
      tags: ['store'],
      'x-stability': 'experimental',
      response: keyedResponses(errorResponses([401, 501], { 501: NOT_IMPLEMENTED }))
    },
    handle: function listStoreOrders () {
      throw errors.storeOrdersNotImplemented()
    }
  }]
}
