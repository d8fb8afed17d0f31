import { test } from 'node:test'
import assert from 'node:assert/strict'
import { isValidTraceId, ROOT_CONTEXT } from '@opentelemetry/api'
import { SamplingDecision, TraceIdRatioBasedSampler } from '@opentelemetry/sdk-trace-base'
import type { Config } from '../config.js'
import { decisionsOf, newTraceId } from './tracing.js'

const rootBound = async (config: Pick<Config, 'otelTracesSampler' | 'otelTracesSamplerArg'>): Promise<number> => (await decisionsOf(config)).rootBound

const keptBy = (sampler: TraceIdRatioBasedSampler, traceId: string): boolean =>
  sampler.shouldSample(ROOT_CONTEXT, traceId).decision === SamplingDecision.RECORD_AND_SAMPLED

/** A trace id whose 8-digit parts XOR to `value`: its first part, the others zero. */
const idMixingTo = (value: number): string => `${value.toString(16).padStart(8, '0')}${'0'.repeat(24)}`

test('a ratio\'s bound is the one the SDK\'s ratio sampler keeps ids under', async () => {
  for (const ratio of [0.001, 0.1, 0.25, 0.5, 0.999]) {
    const bound = await rootBound({ otelTracesSampler: 'parentbased_traceidratio', otelTracesSamplerArg: ratio })
    assert.equal(await rootBound({ otelTracesSampler: 'traceidratio', otelTracesSamplerArg: ratio }), bound)
    const sdk = new TraceIdRatioBasedSampler(ratio)
    assert.ok(keptBy(sdk, idMixingTo(bound - 1)), `ratio ${ratio}: the id just under the bound is kept`)
    assert.ok(!keptBy(sdk, idMixingTo(bound)), `ratio ${ratio}: the id at the bound is left out`)
  }
})

test('the root samplers without a ratio keep every new trace or none', async () => {
  for (const sampler of ['always_on', 'parentbased_always_on'] as const) {
    const bound = await rootBound({ otelTracesSampler: sampler, otelTracesSamplerArg: undefined })
    assert.ok(Array.from({ length: 1000 }, () => newTraceId(bound)).every((id) => id !== undefined && isValidTraceId(id)), `${sampler} keeps all`)
  }
  assert.equal(await rootBound({ otelTracesSampler: 'traceidratio', otelTracesSamplerArg: 1 }), 2 ** 32)
  for (const sampler of ['always_off', 'parentbased_always_off'] as const) {
    const bound = await rootBound({ otelTracesSampler: sampler, otelTracesSamplerArg: undefined })
    assert.ok(Array.from({ length: 1000 }, () => newTraceId(bound)).every((id) => id === undefined), `${sampler} keeps none`)
  }
  assert.ok(Array.from({ length: 1000 }, () => newTraceId(0)).every((id) => id === undefined), 'a ratio of 0 keeps none')
})

test('a new trace is kept at the ratio, with an id the SDK\'s ratio sampler keeps', async () => {
  const sdk = new TraceIdRatioBasedSampler(0.25)
  const bound = await rootBound({ otelTracesSampler: 'parentbased_traceidratio', otelTracesSamplerArg: 0.25 })
  const draws = 20_000
  const kept = Array.from({ length: draws }, () => newTraceId(bound)).filter((id) => id !== undefined)
  // A quarter of 20,000 draws lies within ±2,000 of 5,000 but for odds far below one in 10^100.
  assert.ok(kept.length > 3000 && kept.length < 7000, `${kept.length} of ${draws} kept at a ratio of 0.25`)
  for (const id of kept) {
    assert.ok(isValidTraceId(id), `${id} is a valid trace id`)
    assert.ok(keptBy(sdk, id), `${id} is one the ratio keeps`)
  }
  assert.equal(new Set(kept).size, kept.length, 'every kept id is new')
})
