import type { FastifyInstance } from 'fastify'
import swagger from '@fastify/swagger'
import { ErrorSchema } from '../schemas/error.js'
import { NewPetSchema, PetSchema, PetsSchema, PetStatusSchema } from '../schemas/pet.js'

export interface OpenApiOptions {
  publicBaseUrl: string | undefined
  stagingBaseUrl: string | undefined
}

const API_DESCRIPTION = `List, add and fetch the animals of a store.

Every operation requires an API key sent as \`Authorization: Bearer <API_KEY>\`; get one by creating an account and generating a key.
Every error has the body \`{code, message, status}\`. Besides the responses listed per operation, any path under /v1 may answer
404 \`not_found\` (unknown path), 405 \`method_not_allowed\` with an \`Allow\` header (known path, other method; \`OPTIONS\` answers 204 with \`Allow\`),
503 \`service_unavailable\` with \`Retry-After\` while shutting down, and 500 \`internal_error\`.`

/**
 * Registers the schemas shared by routes and document, then @fastify/swagger, which
 * builds the OpenAPI 3.1 document from the very route schemas that validate requests.
 */
export async function registerOpenApi (app: FastifyInstance, options: OpenApiOptions): Promise<void> {
  for (const schema of [PetStatusSchema, NewPetSchema, PetSchema, PetsSchema, ErrorSchema]) app.addSchema(schema)

  const servers = [
    { url: options.publicBaseUrl ?? '/v1', description: 'Production' },
    ...(options.stagingBaseUrl === undefined ? [] : [{ url: options.stagingBaseUrl, description: 'Staging' }])
  ]

  await app.register(swagger, {
    openapi: {
      openapi: '3.1.0',
      info: {
        title: 'Animal Store API',
        version: '1.0.0',
        description: API_DESCRIPTION
      },
      servers,
      tags: [
        { name: 'animals', description: 'The catalogue of animals.' },
        { name: 'store', description: 'Store orders (named by the specification, not described).' },
        { name: 'meta', description: 'About the API itself.' }
      ],
      security: [{ bearerAuth: [] }],
      components: {
        securitySchemes: {
          bearerAuth: { type: 'http', scheme: 'bearer', description: 'An API key: `Authorization: Bearer ask_…`.' }
        },
        responses: {
          MethodNotAllowed: {
            description: 'The path exists but not with this method; `Allow` lists the methods it serves.',
            headers: { Allow: { schema: { type: 'string' } } },
            content: { 'application/json': { schema: { $ref: '#/components/schemas/Error' } } }
          }
        }
      }
    },
    refResolver: {
      buildLocalReference: (json, _baseUri, _fragment, i) => (typeof json.$id === 'string' ? json.$id : `def-${i}`)
    },
    // Paths are relative to the servers, whose URLs already end in /v1, as in the specification.
    transform: ({ schema, url }) => ({ schema, url: url.replace(/^\/v1(?=\/)/, '') })
  })
}
