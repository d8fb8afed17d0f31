// The ceiling: bare node:http that checks the bearer header and returns a precomputed page.
//
// BENCH_CREATES sets what a create costs it. Unset, a create is answered at once and kept nowhere.
// Otherwise each create's body is appended to BENCH_LOG_FILE before it is answered, the least any
// durable service must do, so that the service's durable creates can be set beside what the same
// machine allows a server that does nothing else:
// - `written`: creates arriving together are written with one write, never synced;
// - `synced`: the same, and one fdatasync per batch before its answers (group commit);
// - `synced-each`: each create written and synced on its own before the next.
// Batches form as the service's group commit forms them: at the first turn of the event loop that
// found no I/O to handle. The log is 4 MB, allocated and synced at start and overwritten in place,
// as SQLite reuses its write-ahead log.
import { closeSync, fdatasyncSync, openSync, writeSync } from 'node:fs'
import { createServer } from 'node:http'

const page = JSON.stringify(Array.from({ length: 20 }, (_, i) => ({ id: i + 1, name: `pet ${i + 1}`, categoryId: 1, status: 'available' })))
const one = JSON.stringify({ id: 1, name: 'pet 1', categoryId: 1, status: 'available' })
const expected = `Bearer ${process.env.BENCH_KEY}`
const creates = process.env.BENCH_CREATES

const created = (response) => response.writeHead(201, { 'content-type': 'application/json', location: '/v1/pets/1' }).end(one)

function createLog (path, synced, each) {
  const LOG_BYTES = 4 * 1024 * 1024
  const IDLE_TURN_MS = 0.01
  const fd = openSync(path, 'w+')
  writeSync(fd, Buffer.alloc(LOG_BYTES), 0, LOG_BYTES, 0)
  fdatasyncSync(fd)
  let position = 0
  const append = (bytes) => {
    if (position + bytes.length > LOG_BYTES) position = 0
    writeSync(fd, bytes, 0, bytes.length, position)
    position += bytes.length
    if (synced) fdatasyncSync(fd)
  }
  let pending = []
  let scheduled = false
  const flush = () => {
    scheduled = false
    const batch = pending
    pending = []
    append(Buffer.concat(batch.map(({ body }) => body)))
    for (const { response } of batch) created(response)
  }
  const schedule = () => {
    if (scheduled) return
    scheduled = true
    let turnStarted = performance.now()
    const atNextTurn = () => {
      const now = performance.now()
      if (now - turnStarted < IDLE_TURN_MS) flush()
      else {
        turnStarted = now
        setImmediate(atNextTurn)
      }
    }
    setImmediate(atNextTurn)
  }
  return {
    add (body, response) {
      if (each) {
        append(body)
        created(response)
        return
      }
      pending.push({ body, response })
      schedule()
    },
    close: () => closeSync(fd)
  }
}

const log = creates === undefined ? undefined : createLog(process.env.BENCH_LOG_FILE, creates !== 'written', creates === 'synced-each')

const server = createServer((request, response) => {
  if (request.headers.authorization !== expected) {
    response.writeHead(401, { 'content-type': 'application/json' }).end('{"code":"unauthorized","message":"no","status":401}')
    return
  }
  if (request.method === 'POST') {
    if (log === undefined) {
      request.resume()
      request.on('end', () => created(response))
      return
    }
    const chunks = []
    request.on('data', (chunk) => chunks.push(chunk))
    request.on('end', () => log.add(Buffer.concat(chunks), response))
    return
  }
  const body = request.url.startsWith('/v1/pets/') ? one : page
  response.writeHead(200, { 'content-type': 'application/json; charset=utf-8' }).end(body)
})
server.listen(Number(process.env.PORT), '127.0.0.1', () => console.log('listening'))
process.on('SIGTERM', () => server.close(() => {
  log?.close()
  process.exit(0)
}))
