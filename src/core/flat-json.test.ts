import { test } from 'node:test'
import assert from 'node:assert/strict'
import fc from 'fast-check'
import { parse as parseLossless, isLosslessNumber } from 'lossless-json'
import { IntegerLiteral, scanFlatObject, type FlatMember } from './flat-json.js'

/** What JSON.parse and a lossless parser make of the text, in the scanner's terms; undefined when either refuses it. */
function reference (text: string): Array<[string, unknown]> | undefined {
  let parsed: unknown
  let lossless: unknown
  try {
    parsed = JSON.parse(text)
    lossless = parseLossless(text)
  } catch {
    return undefined
  }
  if (typeof parsed !== 'object' || parsed === null || Array.isArray(parsed)) return undefined
  return Object.entries(parsed).map(([key, value]) => {
    const exact = (lossless as Record<string, unknown>)[key]
    return [key, typeof value === 'number' && isLosslessNumber(exact) ? `integer ${exact.value}` : value]
  })
}

function scanned (members: Map<string, FlatMember>): Array<[string, unknown]> {
  return [...members].map(([key, value]) => [key, value instanceof IntegerLiteral ? `integer ${value.text}` : value])
}

const byKey = (entries: Array<[string, unknown]>): Array<[string, unknown]> => [...entries].sort(([a], [b]) => (a < b ? -1 : a > b ? 1 : 0))

const whitespace = fc.stringMatching(/^[ \t\n\r]{0,2}$/)
const member = fc.tuple(
  fc.string({ unit: 'binary', maxLength: 8 }),
  fc.oneof(fc.string({ unit: 'binary', maxLength: 12 }), fc.bigInt({ min: -(10n ** 25n), max: 10n ** 25n })),
  whitespace, whitespace, whitespace
)
/** Flat objects written with JSON's escapes and any whitespace between tokens. */
const flatObjectText = fc.tuple(fc.array(member, { maxLength: 5 }), whitespace, whitespace).map(([members, before, after]) =>
  `${before}{${members.map(([key, value, a, b, c]) => `${a}${JSON.stringify(key)}${b}:${c}${typeof value === 'bigint' ? value.toString() : JSON.stringify(value)}`).join(',')}}${after}`)

test('reads every flat object exactly as JSON.parse does, integers with their digits', () => {
  fc.assert(fc.property(flatObjectText, (text) => {
    const expected = reference(text)
    const members = scanFlatObject(text)
    if (expected === undefined) return
    // A repeated or escaped key is left to the full parser; anything else is read here.
    if (members === undefined) {
      const keys = [...text.matchAll(/"((?:[^"\\]|\\.)*)"\s*:/g)].map((match) => match[1])
      assert.ok(new Set(keys).size < keys.length || keys.some((key) => key?.includes('\\')), `refused ${text}`)
      return
    }
    assert.deepEqual(byKey(scanned(members)), byKey(expected))
  }), { numRuns: 2000 })
})

test('never reads a text that JSON.parse refuses, nor one it reads differently', () => {
  const texts = fc.oneof(
    fc.string({ unit: 'binary', maxLength: 40 }),
    // Valid flat objects with a character inserted, removed or replaced somewhere.
    fc.tuple(flatObjectText, fc.nat(), fc.string({ unit: 'binary', maxLength: 2 }), fc.nat({ max: 2 }))
      .map(([text, position, inserted, removed]) => {
        const at = position % (text.length + 1)
        return text.slice(0, at) + inserted + text.slice(at + removed)
      })
  )
  fc.assert(fc.property(texts, (text) => {
    const members = scanFlatObject(text)
    if (members === undefined) return
    const expected = reference(text)
    assert.notEqual(expected, undefined, `read ${JSON.stringify(text)}, which JSON.parse refuses`)
    assert.deepEqual(byKey(scanned(members)), byKey(expected ?? []))
  }), { numRuns: 5000 })
})

test('leaves to the full parser every text that is not a flat object of strings and plain integers', () => {
  for (const text of [
    '', ' ', '[]', '"name"', '1', 'null', '{', '{"a":1', '{"a":1,}', '{"a" 1}', '{a:1}', "{'a':1}",
    '{"a":{}}', '{"a":[]}', '{"a":true}', '{"a":null}', '{"a":1.0}', '{"a":1e3}', '{"a":1E3}', '{"a":01}',
    '{"a":-}', '{"a":+1}', '{"a":-01}', '{"a":1,"a":2}', '{"\\u0061":1}', '{"a\\"b":1}', '{"a":"\\x"}',
    '{"a":"tab\there"}', '{"a":"unterminated}', '{"a":1}x', '{"a":1}{}', '{"a":1}\u00a0'
  ]) {
    assert.equal(scanFlatObject(text), undefined, text)
  }
})

test('keeps integers beyond 2^53 as their digits and decodes escaped strings', () => {
  const members = scanFlatObject(' {"name" : "Rex \\"the\\" \\u00e9", "categoryId":-9223372036854775808,"n":0}\n')
  assert.deepEqual(members && scanned(members), [
    ['name', 'Rex "the" é'],
    ['categoryId', 'integer -9223372036854775808'],
    ['n', 'integer 0']
  ])
  assert.deepEqual(scanFlatObject('{}'), new Map())
  assert.deepEqual(scanFlatObject('\t{ }\r\n'), new Map())
})
