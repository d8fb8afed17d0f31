import { test } from 'node:test'
import assert from 'node:assert/strict'
import { parseTraceparent } from './trace-context.js'

test('parseTraceparent reads a valid header and opens a span of its own', () => {
  const context = parseTraceparent('00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01')
  assert.equal(context?.traceId, '4bf92f3577b34da6a3ce929d0e0e4736')
  assert.equal(context?.parentSpanId, '00f067aa0ba902b7')
  assert.match(context?.spanId ?? '', /^[0-9a-f]{16}$/)
  assert.notEqual(context?.spanId, '00f067aa0ba902b7')
  assert.equal(context?.sampled, true)
})

test('parseTraceparent ignores invalid headers', () => {
  for (const header of [
    '', 'garbage', '00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7',
    '00-00000000000000000000000000000000-00f067aa0ba902b7-01',
    '00-4bf92f3577b34da6a3ce929d0e0e4736-0000000000000000-01',
    'ff-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01',
    '00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01-extra'
  ]) assert.equal(parseTraceparent(header), undefined, header)
  assert.equal(parseTraceparent(undefined), undefined)
})

test('parseTraceparent accepts a future version with extra fields', () => {
  assert.equal(parseTraceparent('01-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-00-extra')?.sampled, false)
})
