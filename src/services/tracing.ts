import { context, isSpanContextValid, ROOT_CONTEXT, SamplingDecision, SpanKind, SpanStatusCode, trace, type Attributes, type Context, type Span, type Tracer } from '@opentelemetry/api'
import type { Sampler } from '@opentelemetry/sdk-trace-base'
import type { Config } from '../config.js'

/** The instrumentation scope every span of the service is recorded under. */
const SCOPE = 'animal-store'

/** How long stopping waits for the last spans to be taken by the collector. */
const LAST_EXPORT_WAIT_MS = 2000

/** What a sampling decision is given besides the trace: the official samplers read no attributes and no links. */
const NO_ATTRIBUTES: Attributes = Object.freeze({})
const NO_LINKS = Object.freeze([]) as []

/**
 * The service's tracer while tracing is on, undefined otherwise. Every span the service makes is
 * asked of it behind one `tracer === undefined` test, so without an endpoint nothing is allocated
 * for tracing: no span, no context, not even the API's no-op span.
 */
let tracer: Tracer | undefined

/**
 * How a trace the service starts or continues is decided while tracing is on (sampledSpan,
 * decisionsOf).
 */
let roots: { sampler: Sampler, rootBound: number } | undefined

/** The trace id a kept new trace was decided on, for the tracer's id generator to give its root span while sampledSpan makes it. */
let decidedTraceId: string | undefined

export function activeTracer (): Tracer | undefined {
  return tracer
}

/** Tracing as start-up turned it on: what stops it, exporting what is still gathered. */
export interface Tracing {
  readonly url: string
  shutdown: () => Promise<void>
}

/**
 * Where spans are sent: OTEL_EXPORTER_OTLP_TRACES_ENDPOINT as given, or OTEL_EXPORTER_OTLP_ENDPOINT
 * with the signal's path appended, as the OTLP exporter specification says; undefined: no tracing.
 */
export function tracesEndpoint (config: Readonly<Pick<Config, 'otelTracesEndpoint' | 'otelEndpoint'>>): string | undefined {
  if (config.otelTracesEndpoint !== undefined) return config.otelTracesEndpoint
  if (config.otelEndpoint !== undefined) return `${config.otelEndpoint.replace(/\/+$/, '')}/v1/traces`
  return undefined
}

/**
 * Turns tracing on when an endpoint is configured: the official SDK, with the W3C trace-context
 * propagator and an AsyncLocalStorage context, exporting OTLP/HTTP (JSON) in batches off the
 * request path. The SDK is loaded only then: a service without tracing never loads it.
 */
export async function startTracing (config: Readonly<Config>): Promise<Tracing | undefined> {
  const url = tracesEndpoint(config)
  if (url === undefined) return undefined
  const [{ NodeTracerProvider }, { AlwaysOnSampler, BatchSpanProcessor, RandomIdGenerator }, { OTLPTraceExporter }, { resourceFromAttributes }, { ATTR_SERVICE_NAME }] = await Promise.all([
    import('@opentelemetry/sdk-trace-node'),
    import('@opentelemetry/sdk-trace-base'),
    import('@opentelemetry/exporter-trace-otlp-http'),
    import('@opentelemetry/resources'),
    import('@opentelemetry/semantic-conventions')
  ])
  const random = new RandomIdGenerator()
  const provider = new NodeTracerProvider({
    resource: resourceFromAttributes({ [ATTR_SERVICE_NAME]: config.otelServiceName }),
    // Every span reaches the tracer already kept: a root by sampledSpan, with the configured sampler, a child only under a recorded span.
    sampler: new AlwaysOnSampler(),
    idGenerator: {
      generateTraceId: () => decidedTraceId ?? random.generateTraceId(),
      generateSpanId: () => random.generateSpanId()
    },
    spanProcessors: [new BatchSpanProcessor(new OTLPTraceExporter({ url }))]
  })
  provider.register()
  roots = await decisionsOf(config)
  tracer = provider.getTracer(SCOPE)
  return {
    url,
    shutdown: async () => {
      tracer = undefined
      roots = undefined
      // A collector that does not answer must not hold the shutdown up: what it has not taken by then is dropped.
      let timer: NodeJS.Timeout | undefined
      await Promise.race([
        provider.shutdown().catch(() => {}),
        new Promise<void>((resolve) => { timer = setTimeout(resolve, LAST_EXPORT_WAIT_MS) })
      ])
      clearTimeout(timer)
    }
  }
}

/** Past every value of a new trace's words XORed: its root sampler keeps every new trace. */
const EVERY_TRACE = 2 ** 32

/**
 * How OTEL_TRACES_SAMPLER and OTEL_TRACES_SAMPLER_ARG decide a trace: the sampler they name, as the
 * SDK's environment reader would build it, for a caller's trace; and for a new one, what its root
 * sampler keeps, as a bound on the id's words XORed (newTraceId): TraceIdRatioBasedSampler's own
 * bound for a ratio, every trace for always_on, none for always_off.
 */
export async function decisionsOf (config: Readonly<Pick<Config, 'otelTracesSampler' | 'otelTracesSamplerArg'>>): Promise<{ sampler: Sampler, rootBound: number }> {
  const { AlwaysOffSampler, AlwaysOnSampler, ParentBasedSampler, TraceIdRatioBasedSampler } = await import('@opentelemetry/sdk-trace-base')
  const fraction = Math.min(Math.max(config.otelTracesSamplerArg ?? 1, 0), 1)
  const ratio = { sampler: new TraceIdRatioBasedSampler(fraction), rootBound: fraction === 1 ? EVERY_TRACE : Math.floor(fraction * 0xffffffff) }
  switch (config.otelTracesSampler) {
    case 'always_on': return { sampler: new AlwaysOnSampler(), rootBound: EVERY_TRACE }
    case 'always_off': return { sampler: new AlwaysOffSampler(), rootBound: 0 }
    case 'traceidratio': return ratio
    case 'parentbased_always_on': return { sampler: new ParentBasedSampler({ root: new AlwaysOnSampler() }), rootBound: EVERY_TRACE }
    case 'parentbased_always_off': return { sampler: new ParentBasedSampler({ root: new AlwaysOffSampler() }), rootBound: 0 }
    case 'parentbased_traceidratio': return { sampler: new ParentBasedSampler({ root: ratio.sampler }), rootBound: ratio.rootBound }
  }
}

/**
 * The 16 bytes of the new trace's id being decided, which Node writes out in hex: a word above 2^31
 * is a double to V8, and a double's `toString(16)` takes a slow path.
 */
const idBytes = Buffer.alloc(16)

/**
 * A new trace's id when its root sampler keeps it, undefined otherwise. The id's words are drawn
 * as the SDK's RandomIdGenerator draws them, and tested as TraceIdRatioBasedSampler tests the id
 * they spell (its 8-digit parts XORed, below the bound), so the decision is the sampler's own; a
 * left-out trace, 9 in 10 at a ratio of 0.1, then costs four random numbers: no id string, no
 * sampler call (docs/performance.md, speed code). An all-zero id, which no span may have, is left out.
 */
export function newTraceId (bound: number): string | undefined {
  let mixed = 0
  let any = 0
  for (let index = 0; index < 4; index++) {
    const word = (Math.random() * 2 ** 32) >>> 0
    idBytes.writeUInt32BE(word, index * 4)
    mixed = (mixed ^ word) >>> 0
    any |= word
  }
  if (mixed >= bound || any === 0) return undefined
  return idBytes.toString('hex')
}

/**
 * The span of a request or of background work, made only when the configured sampler keeps its
 * trace; undefined when it leaves it out, which then costs the decision alone: no span, no
 * attributes (asked of `attributes` only for a kept span), no context. `parent` is the caller's
 * context (an incoming traceparent) or ROOT_CONTEXT. A caller's trace is asked of the configured
 * sampler; a new one is decided on the id its span then gets (newTraceId), so a ratio sampler keeps
 * the ids it says it keeps, and each trace is decided once.
 */
export function sampledSpan (name: string, kind: SpanKind, parent: Context, attributes: () => Attributes): Span | undefined {
  if (tracer === undefined || roots === undefined) return undefined
  const caller = trace.getSpanContext(parent)
  if (caller !== undefined && isSpanContextValid(caller)) {
    if (roots.sampler.shouldSample(parent, caller.traceId, name, kind, NO_ATTRIBUTES, NO_LINKS).decision !== SamplingDecision.RECORD_AND_SAMPLED) return undefined
  } else {
    decidedTraceId = newTraceId(roots.rootBound)
    if (decidedTraceId === undefined) return undefined
  }
  try {
    return tracer.startSpan(name, { kind, attributes: attributes() }, parent)
  } finally {
    decidedTraceId = undefined
  }
}

/**
 * The span of work done for a request, as a child of the request's span, when that span is
 * recorded; undefined otherwise (no tracing, work outside any request such as a timer's, or a
 * request the sampler left out), and the work then runs as it would without tracing.
 */
export function childSpan (name: string, attributes: Attributes, kind: SpanKind = SpanKind.INTERNAL): Span | undefined {
  if (tracer === undefined) return undefined
  const parent = trace.getSpan(context.active())
  if (parent === undefined || !parent.isRecording()) return undefined
  return tracer.startSpan(name, { kind, attributes })
}

/** Ends the span once `result` settles, marking it failed when it rejects; the caller keeps its own promise. */
export function endWith (span: Span, result: Promise<unknown>): void {
  result.then(() => { span.end() }, (error: unknown) => {
    span.recordException(error instanceof Error ? error : String(error))
    span.setStatus({ code: SpanStatusCode.ERROR })
    span.end()
  })
}

/** Runs `work` in a child span of the request's (see childSpan); without one, runs it alone. */
export async function inChildSpan<T> (name: string, attributes: Attributes, work: () => Promise<T>, kind?: SpanKind): Promise<T> {
  const span = childSpan(name, attributes, kind)
  if (span === undefined) return await work()
  const result = context.with(trace.setSpan(context.active(), span), work)
  endWith(span, result)
  return await result
}

/**
 * Runs background work (the mail sender's delivery) in a span of its own, a root the sampler
 * decides on, since no request waits for it; without tracing, or left out, runs it alone.
 */
export async function inRootSpan<T> (name: string, attributes: Attributes, work: () => Promise<T>): Promise<T> {
  const span = sampledSpan(name, SpanKind.CLIENT, ROOT_CONTEXT, () => attributes)
  if (span === undefined) return await work()
  const result = context.with(trace.setSpan(ROOT_CONTEXT, span), work)
  endWith(span, result)
  return await result
}
