// The framework floor: the least a Fastify application does to answer the service's cached reads.
//
// One onRequest hook checks the bearer header, as the ceiling (bench/ceiling-server.mjs) does; two
// routes validate their query and path with compiled schemas and send the ceiling's fixed bytes with
// the header fields the service sends on those answers (a request id, nosniff, the type, and the
// page's link and ETag, or the animal's deprecation fields). No logger, no other hook, no database.
// Side by side with the ceiling it shows what the framework alone costs a request, and side by side
// with the bare service what the service's own steps cost on top (npm run bench:protections).
import { randomUUID } from 'node:crypto'
import Fastify from 'fastify'

const page = Buffer.from(JSON.stringify(Array.from({ length: 20 }, (_, i) => ({ id: i + 1, name: `pet ${i + 1}`, categoryId: 1, status: 'available' }))))
const one = Buffer.from(JSON.stringify({ id: 1, name: 'pet 1', categoryId: 1, status: 'available' }))
const expected = `Bearer ${process.env.BENCH_KEY}`

const app = Fastify({ logger: false, genReqId: () => randomUUID() })
app.addHook('onRequest', (request, reply, done) => {
  if (request.headers.authorization === expected) done()
  else reply.code(401).send({ code: 'unauthorized', message: 'no', status: 401 })
})
const list = { type: 'object', properties: { limit: { type: 'integer', minimum: 1, maximum: 100 }, cursor: { type: 'string', maxLength: 200 }, status: { enum: ['available', 'pending', 'sold'] } }, additionalProperties: false }
app.get('/v1/pets', { schema: { querystring: list } }, (request, reply) => {
  reply.header('x-request-id', request.id).header('x-content-type-options', 'nosniff').header('content-type', 'application/json; charset=utf-8')
    .header('link', '</v1/pets?limit=20&cursor=MjAu.fgavJhSTHzZnsoiUvyTiAg>; rel="next"').header('etag', '"VBgXGnlKblTfzZITgtsGnMSQrMG"').send(page)
})
app.get('/v1/pets/:id', { schema: { params: { type: 'object', properties: { id: { type: 'integer', minimum: 1 } }, required: ['id'] } } }, (request, reply) => {
  reply.header('x-request-id', request.id).header('x-content-type-options', 'nosniff').header('content-type', 'application/json; charset=utf-8')
    .header('deprecation', '@1764892800').header('sunset', 'Thu, 05 Dec 2030 00:00:00 GMT').header('link', '</v1/pets>; rel="successor-version"').send(one)
})
await app.listen({ port: Number(process.env.PORT), host: '127.0.0.1' })
console.log('listening')
process.on('SIGTERM', () => app.close(() => process.exit(0)))
