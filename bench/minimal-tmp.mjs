import Fastify from 'fastify'
const page = Buffer.from(JSON.stringify(Array.from({ length: 20 }, (_, i) => ({ id: i + 1, name: `pet ${i + 1}`, categoryId: 1, status: 'available' }))))
const expected = `Bearer ${process.env.BENCH_KEY}`
const app = Fastify({ logger: false })
const hooks = Number(process.env.HOOKS ?? 0)
for (let i = 0; i < hooks; i++) app.addHook('onRequest', (req, reply, done) => done())
app.get('/v1/pets', (request, reply) => {
  if (request.headers.authorization !== expected) { reply.code(401).send('no'); return reply }
  reply.header('content-type', 'application/json; charset=utf-8').send(page)
  return reply
})
await app.listen({ port: Number(process.env.PORT), host: '127.0.0.1' })
