import { createServer } from 'node:http'
const page = Buffer.from(JSON.stringify(Array.from({ length: 20 }, (_, i) => ({ id: i + 1, name: `pet ${i + 1}` }))))
if (process.env.WITH_REDIS) {
  const { Redis } = await import('ioredis')
  const r = new Redis('redis://127.0.0.1:6379', { enableOfflineQueue: false })
  await new Promise((res) => r.once('ready', res))
}
createServer((req, res) => {
  req.resume(); req.on('end', () => {})
  process.nextTick(() => res.writeHead(200, { 'content-type': 'application/json' }).end(page))
}).listen(Number(process.env.PORT), '127.0.0.1')
