// Preloaded with `--import` (bench:compare: current:NODE_OPTIONS=--import=./bench/http-client-on.mjs), this makes the
// process an HTTP client as tracing's OTLP exporter makes it: a JSON POST of about 460 KB every 250 ms, with a
// keep-alive agent, to a receiver in the same process that drops it. What using node:http as a client costs a
// server's own requests, with no tracing at all.
import http from 'node:http'

const body = JSON.stringify({ spans: Array.from({ length: 512 }, (_, index) => ({ index, name: 'GET /v1/pets', padding: 'x'.repeat(880) })) })
const agent = new http.Agent({ keepAlive: true })
const sink = http.createServer((request, response) => {
  request.resume().on('end', () => { response.writeHead(200, { 'content-type': 'application/json' }).end('{}') })
})
sink.listen(0, '127.0.0.1', () => {
  const { port } = sink.address()
  setInterval(() => {
    const request = http.request({ host: '127.0.0.1', port, method: 'POST', path: '/v1/traces', agent, headers: { 'content-type': 'application/json' } }, (response) => { response.resume() })
    request.on('error', () => {})
    request.on('socket', (socket) => { socket.unref() })
    request.end(body)
  }, 250).unref()
  // Neither the receiver nor the client's kept-alive connections hold the process up when the server stops.
  sink.on('connection', (socket) => { socket.unref() })
  sink.unref()
})
