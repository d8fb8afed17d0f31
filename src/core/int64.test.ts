import { test } from 'node:test'
import assert from 'node:assert/strict'
import { parseInt64Literal, parsePositiveInt64Text } from './int64.js'

test('parseInt64Literal keeps integers beyond 2^53 exactly', () => {
  assert.equal(parseInt64Literal('9007199254740993'), 9007199254740993n)
  assert.equal(parseInt64Literal('-9223372036854775808'), -9223372036854775808n)
  assert.equal(parseInt64Literal('9223372036854775807'), 9223372036854775807n)
})

test('parseInt64Literal refuses overflow, fractions, exponents and leading zeros', () => {
  for (const literal of ['9223372036854775808', '-9223372036854775809', '1.5', '1e3', '01', '', '-']) {
    assert.equal(parseInt64Literal(literal), undefined, literal)
  }
})

test('parsePositiveInt64Text accepts 1..2^63-1 written without sign or leading zero', () => {
  assert.equal(parsePositiveInt64Text('1'), 1n)
  assert.equal(parsePositiveInt64Text('9223372036854775807'), 9223372036854775807n)
  for (const text of ['0', '01', '-1', '+1', '1.0', '9223372036854775808', '10000000000000000000', 'abc', ' 1']) {
    assert.equal(parsePositiveInt64Text(text), undefined, text)
  }
})
