import { context, ROOT_CONTEXT, SpanKind, SpanStatusCode, trace, type Attributes, type Span, type Tracer } from '@opentelemetry/api'
import type { Config } from '../config.js'

/** The instrumentation scope every span of the service is recorded under. */
const SCOPE = 'animal-store'

/** How long stopping waits for the last spans to be taken by the collector. */
const LAST_EXPORT_WAIT_MS = 2000

/**
 * The service's tracer while tracing is on, undefined otherwise. Every span the service makes is
 * asked of it behind one `tracer === undefined` test, so without an endpoint nothing is allocated
 * for tracing: no span, no context, not even the API's no-op span.
 */
let tracer: Tracer | undefined

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
  const [{ NodeTracerProvider }, { BatchSpanProcessor }, { OTLPTraceExporter }, { resourceFromAttributes }, { ATTR_SERVICE_NAME }] = await Promise.all([
    import('@opentelemetry/sdk-trace-node'),
    import('@opentelemetry/sdk-trace-base'),
    import('@opentelemetry/exporter-trace-otlp-http'),
    import('@opentelemetry/resources'),
    import('@opentelemetry/semantic-conventions')
  ])
  const provider = new NodeTracerProvider({
    resource: resourceFromAttributes({ [ATTR_SERVICE_NAME]: config.otelServiceName }),
    sampler: await samplerOf(config),
    spanProcessors: [new BatchSpanProcessor(new OTLPTraceExporter({ url }))]
  })
  provider.register()
  tracer = provider.getTracer(SCOPE)
  return {
    url,
    shutdown: async () => {
      tracer = undefined
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

/** The sampler OTEL_TRACES_SAMPLER and OTEL_TRACES_SAMPLER_ARG name, as the SDK's environment reader would build it. */
async function samplerOf (config: Readonly<Config>): Promise<import('@opentelemetry/sdk-trace-base').Sampler> {
  const { AlwaysOffSampler, AlwaysOnSampler, ParentBasedSampler, TraceIdRatioBasedSampler } = await import('@opentelemetry/sdk-trace-base')
  const ratio = new TraceIdRatioBasedSampler(config.otelTracesSamplerArg ?? 1)
  switch (config.otelTracesSampler) {
    case 'always_on': return new AlwaysOnSampler()
    case 'always_off': return new AlwaysOffSampler()
    case 'traceidratio': return ratio
    case 'parentbased_always_off': return new ParentBasedSampler({ root: new AlwaysOffSampler() })
    case 'parentbased_traceidratio': return new ParentBasedSampler({ root: ratio })
    default: return new ParentBasedSampler({ root: new AlwaysOnSampler() })
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
 * decides on, since no request waits for it; without tracing, runs it alone.
 */
export async function inRootSpan<T> (name: string, attributes: Attributes, work: () => Promise<T>): Promise<T> {
  if (tracer === undefined) return await work()
  const span = tracer.startSpan(name, { kind: SpanKind.CLIENT, attributes, root: true })
  const result = context.with(trace.setSpan(ROOT_CONTEXT, span), work)
  endWith(span, result)
  return await result
}
