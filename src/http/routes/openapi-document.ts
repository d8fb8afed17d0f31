import type { Answer } from '../exchange.js'
import { jsonAnswer } from '../exchange.js'
import type { Operation } from '../operation.js'
import { errorResponses, UNAVAILABLE_EXAMPLES } from '../schemas/error.js'

/** The path of the one document under /v1 anyone may read without a key (the authentication step lets it through). */
export const OPENAPI_DOCUMENT_PATH = '/v1/openapi.json'

/**
 * GET /v1/openapi.json: the document of the running service, public. `document` gives its JSON,
 * written once the document is built (at start-up, from every operation's schema).
 */
export function openApiDocumentOperation (document: () => string): Operation {
  let answer: Answer | undefined
  return {
    operationId: 'getOpenApiDocument',
    method: 'GET',
    url: '/openapi.json',
    schema: {
      operationId: 'getOpenApiDocument',
      summary: 'This OpenAPI document',
      description: 'Addition to the specification: the OpenAPI 3.1 document of the running service. No API key needed.',
      tags: ['meta'],
      security: [],
      'x-stability': 'beta',
      response: {
        200: { description: 'The OpenAPI 3.1 document.', type: 'object', additionalProperties: true },
        // No key, so no rate limit and no database: only shedding and draining can refuse it.
        ...errorResponses([503], { 503: { overloaded: UNAVAILABLE_EXAMPLES.overloaded, shuttingDown: UNAVAILABLE_EXAMPLES.shuttingDown } })
      }
    },
    handle: function getOpenApiDocument () {
      answer ??= jsonAnswer(200, document())
      return answer
    }
  }
}
