/** An integer as the JSON text writes it: its digits, so that a value beyond 2^53 can still be read exactly. */
export class IntegerLiteral {
  constructor (readonly text: string) {}
}

export type FlatMember = string | IntegerLiteral

const QUOTE = 0x22
const BACKSLASH = 0x5c
const COMMA = 0x2c
const COLON = 0x3a
const MINUS = 0x2d
const DOT = 0x2e
const LOWER_E = 0x65
const UPPER_E = 0x45
const OPEN_BRACE = 0x7b
const CLOSE_BRACE = 0x7d
const DIGIT_0 = 0x30
const DIGIT_9 = 0x39

const isDigit = (code: number): boolean => code >= DIGIT_0 && code <= DIGIT_9

function skipWhitespace (text: string, at: number): number {
  for (;;) {
    const code = text.charCodeAt(at)
    // JSON's four whitespace characters: space, tab, line feed, carriage return.
    if (code !== 0x20 && code !== 0x09 && code !== 0x0a && code !== 0x0d) return at
    at++
  }
}

/** Index of the quote that ends the string whose content starts at `at`, or -1 (unterminated, or a raw control character). */
function stringEnd (text: string, at: number): { end: number, escaped: boolean } {
  let escaped = false
  for (;;) {
    const code = text.charCodeAt(at)
    if (code === QUOTE) return { end: at, escaped }
    if (code === BACKSLASH) {
      escaped = true
      at += 2
    } else if (code < 0x20 || Number.isNaN(code)) {
      return { end: -1, escaped }
    } else {
      at++
    }
  }
}

/** Index just past the integer literal at `at`, or -1 when the number there is not a plain JSON integer. */
function integerEnd (text: string, at: number): number {
  if (text.charCodeAt(at) === MINUS) at++
  const first = text.charCodeAt(at)
  if (!isDigit(first)) return -1
  at++
  if (first !== DIGIT_0) while (isDigit(text.charCodeAt(at))) at++
  const next = text.charCodeAt(at)
  // A fraction or an exponent: left to the full parser. (After a leading zero, a digit fails as a separator.)
  return next === DOT || next === LOWER_E || next === UPPER_E ? -1 : at
}

/**
 * The members of a JSON text that is one flat object, in order: keys without escapes, each
 * present once, whose values are strings or integers written without fraction or exponent.
 * Undefined for every other text, valid JSON or not: the caller then parses it in full.
 * For a text it reads, the result is what JSON.parse gives, except that integers keep
 * their digits. It exists for speed: a body such as a new animal is read in one pass,
 * without the second, lossless parse that an exact int64 otherwise needs.
 */
export function scanFlatObject (text: string): Map<string, FlatMember> | undefined {
  const members = new Map<string, FlatMember>()
  let at = skipWhitespace(text, 0)
  if (text.charCodeAt(at) !== OPEN_BRACE) return undefined
  at = skipWhitespace(text, at + 1)
  if (text.charCodeAt(at) === CLOSE_BRACE) return skipWhitespace(text, at + 1) === text.length ? members : undefined
  for (;;) {
    if (text.charCodeAt(at) !== QUOTE) return undefined
    const key = stringEnd(text, at + 1)
    if (key.end < 0 || key.escaped) return undefined
    const name = text.slice(at + 1, key.end)
    if (members.has(name)) return undefined
    at = skipWhitespace(text, key.end + 1)
    if (text.charCodeAt(at) !== COLON) return undefined
    at = skipWhitespace(text, at + 1)

    if (text.charCodeAt(at) === QUOTE) {
      const value = stringEnd(text, at + 1)
      if (value.end < 0) return undefined
      if (value.escaped) {
        try {
          members.set(name, JSON.parse(text.slice(at, value.end + 1)) as string)
        } catch {
          return undefined
        }
      } else {
        members.set(name, text.slice(at + 1, value.end))
      }
      at = value.end + 1
    } else {
      const end = integerEnd(text, at)
      if (end < 0) return undefined
      members.set(name, new IntegerLiteral(text.slice(at, end)))
      at = end
    }

    at = skipWhitespace(text, at)
    const separator = text.charCodeAt(at)
    if (separator === CLOSE_BRACE) return skipWhitespace(text, at + 1) === text.length ? members : undefined
    if (separator !== COMMA) return undefined
    at = skipWhitespace(text, at + 1)
  }
}
