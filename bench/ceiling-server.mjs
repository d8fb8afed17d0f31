// The ceiling: bare node:http that checks the bearer header and returns a precomputed page.
import { createServer } from 'node:http'

const page = JSON.stringify(Array.from({ length: 20 }, (_, i) => ({ id: i + 1, name: `pet ${i + 1}`, categoryId: 1, status: 'available' })))
const one = JSON.stringify({ id: 1, name: 'pet 1', categoryId: 1, status: 'available' })
const expected = `Bearer ${process.env.BENCH_KEY}`

const server = createServer((request, response) => {
  if (request.headers.authorization !== expected) {
    response.writeHead(401, { 'content-type': 'application/json' }).end('{"code":"unauthorized","message":"no","status":401}')
    return
  }
  if (request.method === 'POST') {
    request.resume()
    request.on('end', () => response.writeHead(201, { 'content-type': 'application/json', location: '/v1/pets/1' }).end(one))
    return
  }
  const body = request.url.startsWith('/v1/pets/') ? one : page
  response.writeHead(200, { 'content-type': 'application/json; charset=utf-8' }).end(body)
})
server.listen(Number(process.env.PORT), '127.0.0.1', () => console.log('listening'))
process.on('SIGTERM', () => server.close(() => process.exit(0)))
