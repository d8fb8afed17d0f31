import assert from 'node:assert/strict'
import { createServer, type IncomingMessage } from 'node:http'
import type { AddressInfo } from 'node:net'
import { test, type TestContext } from 'node:test'
import { ROOT_CONTEXT, SamplingDecision } from '@opentelemetry/api'
import { TraceIdRatioBasedSampler } from '@opentelemetry/sdk-trace-base'
import { generateApiKey } from '../../src/core/api-keys.js'
import { createTestKey, openTestStore, TEST_ENGINE } from '../helpers/build-app.js'
import { eventually } from '../helpers/eventually.js'
import { REDIS_URL, redisAvailable } from '../helpers/redis.js'
import { csrfTokenOf, formBody } from '../helpers/portal-client.js'
import { launchServer } from '../helpers/server-process.js'
import { SmtpSink } from '../helpers/smtp-sink.js'

/** A span as the OTLP/HTTP JSON encoding carries it, its attributes flattened. */
interface ExportedSpan {
  traceId: string
  spanId: string
  parentSpanId: string
  name: string
  kind: number
  attributes: Record<string, string | number | boolean>
  service: string
}

interface OtlpValue { stringValue?: string, intValue?: string | number, boolValue?: boolean, doubleValue?: number }
interface OtlpAttribute { key: string, value: OtlpValue }
interface OtlpExport {
  resourceSpans: Array<{
    resource: { attributes: OtlpAttribute[] }
    scopeSpans: Array<{ spans: Array<{ traceId: string, spanId: string, parentSpanId?: string, name: string, kind: number, attributes?: OtlpAttribute[] }> }>
  }>
}

const valueOf = (value: OtlpValue): string | number | boolean =>
  value.stringValue ?? (value.intValue === undefined ? undefined : Number(value.intValue)) ?? value.boolValue ?? value.doubleValue ?? ''
const flat = (attributes: OtlpAttribute[] = []): Record<string, string | number | boolean> =>
  Object.fromEntries(attributes.map(({ key, value }) => [key, valueOf(value)]))

/** An OTLP/HTTP receiver in the test process: every span POSTed to /v1/traces, and every body as it came. */
async function otlpReceiver (t: TestContext): Promise<{ url: string, spans: ExportedSpan[], bodies: string[] }> {
  const spans: ExportedSpan[] = []
  const bodies: string[] = []
  const server = createServer((request: IncomingMessage, response) => {
    let body = ''
    request.setEncoding('utf8').on('data', (chunk: string) => { body += chunk }).on('end', () => {
      assert.equal(request.method, 'POST')
      assert.equal(request.url, '/v1/traces')
      assert.match(String(request.headers['content-type']), /^application\/json/)
      bodies.push(body)
      for (const resourceSpans of (JSON.parse(body) as OtlpExport).resourceSpans) {
        const service = String(flat(resourceSpans.resource.attributes)['service.name'])
        for (const scope of resourceSpans.scopeSpans) {
          for (const span of scope.spans) spans.push({ ...span, parentSpanId: span.parentSpanId ?? '', attributes: flat(span.attributes), service })
        }
      }
      response.writeHead(200, { 'content-type': 'application/json' }).end('{}')
    })
  })
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve))
  t.after(() => { server.close() })
  return { url: `http://127.0.0.1:${(server.address() as AddressInfo).port}`, spans, bodies }
}

/**
 * Signs up and logs in through the portal's forms, as a browser does: both hash a password. The
 * sign-up makes its account just after its answer, so the log-in is tried until the account is there.
 */
async function signUpAndLogIn (baseUrl: string, email: string, password: string): Promise<number[]> {
  const post = async (path: string): Promise<number> => {
    const page = await fetch(`${baseUrl}${path}`)
    const cookie = (page.headers.getSetCookie()).map((line) => line.split(';')[0]).join('; ')
    const posted = await fetch(`${baseUrl}${path}`, {
      method: 'POST',
      redirect: 'manual',
      headers: { 'content-type': 'application/x-www-form-urlencoded', cookie },
      body: formBody({ _csrf: csrfTokenOf(await page.text()), email, password })
    })
    await posted.arrayBuffer()
    return posted.status
  }
  const signedUp = await post('/portal/signup')
  const loggedIn = await eventually(async () => {
    const status = await post('/portal/login')
    assert.notEqual(status, 401, 'the account is not made yet')
    return status
  }, { timeout: 30_000, interval: 100 })
  return [signedUp, loggedIn]
}

const CALLER_TRACE = '0af7651916cd43dd8448eb211c80319c'
const CALLER_SPAN = 'b7ad6b7169203331'
const PASSWORD = 'correct horse battery staple'
/** A trace id a ratio of 0.5 keeps (CALLER_TRACE is one it leaves out). */
const HALF_KEEPS_TRACE = '4bf92f3577b34da6a3ce929d8e0e4736'
/** New traces sent at a ratio of 0.5: enough that a quarter kept, as if decided twice, is far outside the bounds. */
const NEW_TRACES = 400

test('with an OTLP endpoint, each request is a server span with its database, key lookup, commit and hashing as children', async (t) => {
  const receiver = await otlpReceiver(t)
  const { store, databaseUrl } = await openTestStore(t)
  const key = await createTestKey(store)
  const sink = await SmtpSink.start(t)
  const server = launchServer(t, { DATABASE_URL: databaseUrl, OTEL_EXPORTER_OTLP_ENDPOINT: receiver.url, OTEL_SERVICE_NAME: 'store-under-test', SMTP_URL: sink.url, MAIL_FROM: 'store@example.com' })
  const baseUrl = await server.listening
  const auth = { authorization: `Bearer ${key}` }

  const created = await fetch(`${baseUrl}/v1/pets`, { method: 'POST', headers: { ...auth, 'content-type': 'application/json' }, body: JSON.stringify({ name: 'Rex', categoryId: 1 }) })
  assert.equal(created.status, 201)
  const { id } = await created.json() as { id: number }
  // The key is cached since the create; the catalogue reads the animal once, then serves it from memory.
  const uncached = await fetch(`${baseUrl}/v1/pets/${id}`, { headers: { ...auth, traceparent: `00-${CALLER_TRACE}-${CALLER_SPAN}-01`, 'user-agent': 'tracing-test' } })
  assert.equal(uncached.status, 200)
  await uncached.arrayBuffer()
  const cached = await fetch(`${baseUrl}/v1/pets/${id}`, { headers: auth })
  assert.equal(cached.status, 200)
  await cached.arrayBuffer()
  // A well-formed key the service never issued: looked up, not found.
  const unknownKey = generateApiKey().key
  const refused = await fetch(`${baseUrl}/v1/pets?api_key=${key}`, { headers: { authorization: `Bearer ${unknownKey}` } })
  assert.equal(refused.status, 401)
  await refused.arrayBuffer()
  assert.deepEqual(await signUpAndLogIn(baseUrl, 'traced@example.com', PASSWORD), [200, 303])
  // The verification message is written after the sign-up's answer: delivered before the server stops.
  await eventually(() => { assert.ok(sink.to('traced@example.com').some((mail) => /^Verify your email address/.test(mail.subject)), 'the verification message reached the sink') }, { timeout: 10_000 })

  // The outbox delivers the verification message on its own time: its span exists once the sink has it.
  await eventually(() => { assert.equal(sink.to('traced@example.com').length, 1) }, { timeout: 10_000 })
  // Stopping the server exports what is still gathered.
  server.child.kill('SIGTERM')
  assert.equal((await server.exited).code, 0)
  const { spans } = receiver
  await eventually(() => { assert.ok(spans.some((span) => span.name === 'POST /portal/login'), 'the log-in\'s span was exported') }, { timeout: 5000 })

  const servers = spans.filter((span) => span.kind === 2)
  const named = (name: string): ExportedSpan[] => servers.filter((span) => span.name === name)
  const childrenOf = (parent: ExportedSpan): ExportedSpan[] => spans.filter((span) => span.parentSpanId === parent.spanId && span.traceId === parent.traceId)
  const descendantsOf = (parent: ExportedSpan): ExportedSpan[] => childrenOf(parent).flatMap((child) => [child, ...descendantsOf(child)])
  assert.ok(spans.every((span) => span.service === 'store-under-test'))

  // The create: its server span, the group commit under it, the insert (and on SQLite the sync) under that.
  const [create] = named('POST /v1/pets')
  assert.ok(create, `no create span among ${servers.map((span) => span.name).join(', ')}`)
  assert.equal(create.attributes['http.request.method'], 'POST')
  assert.equal(create.attributes['http.route'], '/v1/pets')
  assert.equal(create.attributes['url.path'], '/v1/pets')
  assert.equal(create.attributes['http.response.status_code'], 201)
  assert.equal(create.attributes['server.address'], '127.0.0.1')
  assert.equal(create.attributes['client.address'], '127.0.0.1')
  assert.equal(create.parentSpanId, '')
  const commit = descendantsOf(create).find((span) => span.name === 'group commit')
  assert.ok(commit, `no group commit under the create: ${descendantsOf(create).map((span) => span.name).join(', ')}`)
  assert.equal(commit.attributes['db.operation.batch.size'], 1)
  if (TEST_ENGINE === 'sqlite') assert.ok(descendantsOf(commit).some((span) => span.name === 'sync'), 'the WAL sync is a span of the commit')
  assert.ok(descendantsOf(create).some((span) => span.attributes['db.collection.name'] === 'pets'))

  // The uncached read continues the caller's trace, and reads the animal from the database.
  const [read, again] = named('GET /v1/pets/{petId}')
  assert.ok(read !== undefined && again !== undefined)
  assert.equal(read.traceId, CALLER_TRACE)
  assert.equal(read.parentSpanId, CALLER_SPAN)
  assert.equal(read.attributes['user_agent.original'], 'tracing-test')
  assert.equal(read.attributes['http.route'], '/v1/pets/{petId}')
  assert.equal(read.attributes['url.path'], `/v1/pets/${id}`)
  const reads = descendantsOf(read).filter((span) => span.attributes['db.collection.name'] === 'pets')
  assert.ok(reads.length > 0, `no database span under the uncached read: ${descendantsOf(read).map((span) => span.name).join(', ')}`)
  for (const span of reads) {
    assert.equal(span.kind, 3, 'a database call is a client span')
    assert.equal(span.attributes['db.system.name'], TEST_ENGINE === 'sqlite' ? 'sqlite' : 'postgresql')
    assert.equal(typeof span.attributes['db.operation.name'], 'string')
  }
  if (TEST_ENGINE === 'postgres') {
    assert.ok(reads.some((span) => span.attributes['db.operation.name'] === 'SELECT'), 'PostgreSQL statements carry their operation')
    assert.ok(descendantsOf(create).some((span) => span.attributes['db.operation.name'] === 'INSERT'))
  }
  // The cached read: a trace of its own, answered from memory.
  assert.notEqual(again.traceId, CALLER_TRACE)
  assert.deepEqual(descendantsOf(again), [])

  // The refused request: its key was looked up (a cache miss) and not found; its URL is redacted.
  const [refusal] = named('GET /v1/pets')
  assert.ok(refusal)
  assert.equal(refusal.attributes['http.response.status_code'], 401)
  assert.equal(refusal.attributes['url.query'], 'api_key=[redacted]')
  const lookup = childrenOf(refusal).find((span) => span.name === 'API key lookup')
  assert.ok(lookup, 'the key lookup on a cache miss is a span')
  assert.ok(descendantsOf(lookup).some((span) => span.attributes['db.collection.name'] === 'api_keys'))

  // The portal: signing up hashes the password, logging in checks it.
  const [signUp] = named('POST /portal/signup')
  const [logIn] = named('POST /portal/login')
  assert.ok(signUp !== undefined && logIn !== undefined)
  assert.equal(logIn.attributes['http.route'], '/portal/login')
  assert.ok(descendantsOf(signUp).some((span) => span.name === 'password hash'))
  assert.ok(descendantsOf(logIn).some((span) => span.name === 'password check'))

  // Mail delivery: a trace of its own, naming the message's kind, never its recipient.
  const delivery = spans.find((span) => span.name === 'mail delivery' && span.attributes['animal_store.mail.kind'] === 'verify_email')
  assert.ok(delivery, 'the delivery of the verification message is a span')
  assert.equal(delivery.parentSpanId, '')
  assert.ok(!JSON.stringify(delivery).includes('traced@example.com'))

  // No secret anywhere in what was exported.
  for (const body of receiver.bodies) {
    assert.ok(!body.includes(key), 'no API key in any exported span')
    assert.ok(!body.includes(PASSWORD), 'no password in any exported span')
    assert.ok(!body.includes(unknownKey))
  }

  // The access log carries the trace: the caller's when it sent one.
  const lines = server.logs.filter((entry) => entry.msg === 'request completed')
  const readLine = lines.find((entry) => entry.traceId === CALLER_TRACE)
  assert.ok(readLine, 'the access log line carries the continued trace')
  assert.equal(readLine.spanId, read.spanId)
  assert.equal(readLine.parentSpanId, CALLER_SPAN)
  const refusalLine = lines.find((entry) => entry.statusCode === 401)
  assert.equal(refusalLine?.traceId, refusal.traceId)
})

test('sampled out by the caller, or without an endpoint, nothing is exported', async (t) => {
  const receiver = await otlpReceiver(t)
  const { store, databaseUrl } = await openTestStore(t)
  const key = await createTestKey(store)
  const traced = launchServer(t, { DATABASE_URL: databaseUrl, OTEL_EXPORTER_OTLP_TRACES_ENDPOINT: `${receiver.url}/v1/traces` })
  const untraced = launchServer(t, { DATABASE_URL: databaseUrl })
  for (const server of [traced, untraced]) {
    // The caller decided not to sample: the parent-based sampler follows it.
    const response = await fetch(`${await server.listening}/v1/pets`, { headers: { authorization: `Bearer ${key}`, traceparent: `00-${CALLER_TRACE}-${CALLER_SPAN}-00` } })
    assert.equal(response.status, 200)
    await response.arrayBuffer()
    server.child.kill('SIGTERM')
    assert.equal((await server.exited).code, 0)
  }
  assert.deepEqual(receiver.spans, [])
  // The trace is still logged, as the caller's.
  assert.equal(traced.logs.find((entry) => entry.msg === 'request completed')?.traceId, CALLER_TRACE)
  assert.ok(traced.logs.some((entry) => typeof entry.msg === 'string' && entry.msg.startsWith('tracing: spans are exported to')))
  assert.ok(!untraced.logs.some((entry) => typeof entry.msg === 'string' && entry.msg.startsWith('tracing')))
})

test('at a ratio, a new trace is decided once, on the id it is exported with; a left-out one makes no span and logs no trace id', async (t) => {
  const receiver = await otlpReceiver(t)
  const { store, databaseUrl } = await openTestStore(t)
  const key = await createTestKey(store)
  const server = launchServer(t, { DATABASE_URL: databaseUrl, OTEL_EXPORTER_OTLP_ENDPOINT: receiver.url, OTEL_TRACES_SAMPLER: 'parentbased_traceidratio', OTEL_TRACES_SAMPLER_ARG: '0.5' })
  const baseUrl = await server.listening
  const half = new TraceIdRatioBasedSampler(0.5)
  const keptByHalf = (traceId: string): boolean => half.shouldSample(ROOT_CONTEXT, traceId).decision === SamplingDecision.RECORD_AND_SAMPLED
  // The callers' traces go against the ratio: each is followed for its caller's decision alone.
  const callerKept = `00-${CALLER_TRACE}-${CALLER_SPAN}-01`
  const callerLeftOut = `00-${HALF_KEEPS_TRACE}-${CALLER_SPAN}-00`
  assert.ok(!keptByHalf(CALLER_TRACE) && keptByHalf(HALF_KEEPS_TRACE))
  const get = async (headers: Record<string, string>): Promise<void> => {
    const response = await fetch(`${baseUrl}/v1/pets?limit=1`, { headers: { authorization: `Bearer ${key}`, ...headers } })
    assert.equal(response.status, 200)
    await response.arrayBuffer()
  }
  await get({ traceparent: callerKept, 'x-request-id': 'caller-kept' })
  await get({ traceparent: callerLeftOut, 'x-request-id': 'caller-left-out' })
  let sent = 0
  await Promise.all(Array.from({ length: 8 }, async () => {
    while (sent < NEW_TRACES) {
      sent++
      await get({ 'x-request-id': 'new-trace' })
    }
  }))
  server.child.kill('SIGTERM')
  assert.equal((await server.exited).code, 0)
  const servers = await eventually(() => {
    const found = receiver.spans.filter((span) => span.kind === 2)
    assert.ok(found.some((span) => span.traceId === CALLER_TRACE), 'the caller\'s sampled trace is continued')
    return found
  }, { timeout: 5000 })

  const [continued, ...others] = servers.filter((span) => span.traceId === CALLER_TRACE)
  assert.ok(continued !== undefined && others.length === 0)
  assert.equal(continued.parentSpanId, CALLER_SPAN)
  assert.ok(!receiver.spans.some((span) => span.traceId === HALF_KEEPS_TRACE), 'a caller\'s unsampled trace is not recorded')
  const roots = servers.filter((span) => span.parentSpanId === '')
  assert.equal(roots.length, servers.length - 1)
  // Decided once: about half the new traces (a trace decided twice would keep a quarter), each on the id it is exported with.
  assert.ok(roots.length > NEW_TRACES * 0.375 && roots.length < NEW_TRACES * 0.625, `${roots.length} of ${NEW_TRACES} new traces kept at a ratio of 0.5`)
  for (const root of roots) assert.ok(keptByHalf(root.traceId), `${root.traceId} is not one the ratio keeps`)

  // The access log: a kept request's line carries its span's ids, a left-out one's only the ids its caller sent.
  const lines = server.logs.filter((entry) => entry.msg === 'request completed')
  const lineOf = (requestId: string): Record<string, unknown> | undefined => lines.find((entry) => entry.requestId === requestId)
  assert.deepEqual([lineOf('caller-kept')?.traceId, lineOf('caller-kept')?.spanId, lineOf('caller-kept')?.parentSpanId], [CALLER_TRACE, continued.spanId, CALLER_SPAN])
  assert.deepEqual([lineOf('caller-left-out')?.traceId, lineOf('caller-left-out')?.parentSpanId], [HALF_KEEPS_TRACE, CALLER_SPAN])
  const newTraceLines = lines.filter((entry) => entry.requestId === 'new-trace')
  assert.equal(newTraceLines.length, NEW_TRACES)
  const traced = newTraceLines.filter((entry) => entry.traceId !== undefined)
  assert.equal(traced.length, roots.length, 'only a kept new trace has a trace id in its log line')
  for (const line of traced) assert.ok(roots.some((root) => root.traceId === line.traceId && root.spanId === line.spanId))
})

test('a request that waits for the shared rate limit has the Redis reconciliation as a child span', async (t) => {
  if (!await redisAvailable()) {
    t.skip('Redis does not answer')
    return
  }
  const receiver = await otlpReceiver(t)
  const { store, databaseUrl } = await openTestStore(t)
  const key = await createTestKey(store)
  // Near its limit a key waits for the shared count: with a limit of 5, every request does.
  const server = launchServer(t, { DATABASE_URL: databaseUrl, OTEL_EXPORTER_OTLP_ENDPOINT: receiver.url, RATE_LIMIT_PER_MINUTE: '5', REDIS_URL })
  const baseUrl = await server.listening
  for (let request = 0; request < 3; request++) {
    const response = await fetch(`${baseUrl}/v1/pets`, { headers: { authorization: `Bearer ${key}` } })
    assert.equal(response.status, 200)
    await response.arrayBuffer()
  }
  server.child.kill('SIGTERM')
  assert.equal((await server.exited).code, 0)
  await eventually(() => {
    const reads = receiver.spans.filter((span) => span.name === 'GET /v1/pets')
    assert.equal(reads.length, 3)
    const reconciliations = receiver.spans.filter((span) => span.name === 'rate limit reconciliation' && reads.some((read) => read.spanId === span.parentSpanId))
    assert.ok(reconciliations.length > 0, 'a waiting request has its reconciliation as a child')
    for (const span of reconciliations) assert.equal(span.attributes['db.system.name'], 'redis')
  }, { timeout: 5000 })
})
