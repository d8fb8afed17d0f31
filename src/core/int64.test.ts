import { test } from 'node:test'
import assert from 'node:assert/strict'
import { parseInt64Literal, parsePositiveInt64Number } from './int64.js'

test('parseInt64Literal keeps integers beyond 2^53 exactly', () => {
  assert.equal(parseInt64Literal('9007199254740993'), 9007199254740993n)
  assert.equal(parseInt64Literal('-9223372036854775808'), -9223372036854775808n)
  assert.equal(parseInt64Literal('9223372036854775807'), 9223372036854775807n)
})

test('parseInt64Literal reads integers written with a fraction or an exponent exactly', () => {
  assert.equal(parseInt64Literal('1.0'), 1n)
  assert.equal(parseInt64Literal('1e3'), 1000n)
  assert.equal(parseInt64Literal('100e-2'), 1n)
  assert.equal(parseInt64Literal('-0'), 0n)
  assert.equal(parseInt64Literal('0.000e5'), 0n)
  assert.equal(parseInt64Literal('9.223372036854775807e18'), 9223372036854775807n)
})

test('parseInt64Literal refuses overflow, anything that is not exactly an integer, and non-JSON spellings', () => {
  for (const literal of [
    '9223372036854775808', '-9223372036854775809', '1.5', '1.0000000000000001', '0.99999999999999999', '1e-400', '-1e-400',
    '2.0000000000000001e1', '1e19', '1e400', '01', '', '-', '+1', '.5', '1.', 'Infinity', 'NaN', '0x10'
  ]) {
    assert.equal(parseInt64Literal(literal), undefined, literal)
  }
})

test('parsePositiveInt64Number accepts 1..2^63-1 written without sign or leading zero', () => {
  assert.equal(parsePositiveInt64Number('1'), 1)
  assert.equal(parsePositiveInt64Number('999999999999999'), 999999999999999)
  assert.equal(parsePositiveInt64Number('9007199254740993'), 9007199254740992, 'beyond 2^53: the nearest double')
  assert.equal(parsePositiveInt64Number('9223372036854775807'), Number(9223372036854775807n))
  for (const text of ['0', '01', '-1', '+1', '1.0', '9223372036854775808', '10000000000000000000', 'abc', ' 1']) {
    assert.equal(parsePositiveInt64Number(text), undefined, text)
  }
})
