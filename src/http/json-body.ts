import { parse as parseLossless, type ParseOptions } from 'lossless-json'
import { ApiError, errors } from '../core/errors.js'
import { parseInt64Literal } from '../core/int64.js'

export { MAX_BODY_BYTES } from '../core/limits.js'

/** Where the exact value of a categoryId travels from the parser to the handler (a double cannot hold it beyond 2^53). */
export const EXACT_CATEGORY_ID = Symbol('exactCategoryId')

const utf8 = new TextDecoder('utf-8', { fatal: true })

/** A number as the JSON text writes it, so that nothing is rounded before its field is known. */
class NumberLiteral {
  constructor (readonly text: string) {}
}

// Made once: callbacks made afresh for each body keep the parser's calls to them from being optimised, which doubles a parse.
const PARSE_OPTIONS: ParseOptions = {
  parseNumber: (literal) => new NumberLiteral(literal),
  onDuplicateKey: ({ key }) => { throw new ApiError('invalid_request', `the request body repeats the field ${JSON.stringify(key)}; send each field once`) }
}

/**
 * Parses a JSON body in one pass without losing anything: invalid UTF-8 is refused rather than
 * replaced (a leading byte-order mark is allowed, as RFC 8259 lets a parser), a repeated key is
 * refused rather than resolved, a __proto__ key is refused, and numbers keep their digits until
 * their field is known: categoryId is then read exactly from its literal (any integer of the
 * int64 range, in whatever form JSON writes it: 5, 5.0, 5e0), so it round-trips or is refused,
 * never rounded. lossless-json does the parsing: JSON.parse rounds integers beyond 2^53 before
 * anything could look at them.
 */
export function parseJsonBody (bytes: Buffer): unknown {
  if (bytes.length === 0) throw errors.bodyEmpty()
  let text: string
  try {
    text = utf8.decode(bytes)
  } catch {
    throw ApiError.invalidRequest('the request body is not valid UTF-8')
  }
  let value: unknown
  try {
    value = parseLossless(text, undefined, PARSE_OPTIONS)
  } catch (error) {
    if (error instanceof ApiError) throw error
    throw ApiError.invalidRequest(error instanceof RangeError
      ? 'the request body is nested too deeply'
      : `the request body is not valid JSON: ${(error as Error).message}`)
  }
  if (value instanceof NumberLiteral) return Number(value.text)
  if (typeof value !== 'object' || value === null || Array.isArray(value)) return value
  const body = value as Record<string | symbol, unknown>
  for (const key of Object.keys(body)) {
    // Kept as an own property by the parser, harmless here, but refused by name: it is never a field.
    if (key === '__proto__') throw ApiError.invalidRequest('the request body must not contain a __proto__ key')
    const member = body[key]
    if (!(member instanceof NumberLiteral)) continue
    if (key === 'categoryId') setExactCategoryId(body, member.text)
    else body[key] = Number(member.text)
  }
  return body
}

function setExactCategoryId (body: Record<string | symbol, unknown>, literal: string): void {
  const exact = parseInt64Literal(literal)
  if (exact === undefined) throw errors.categoryIdOutOfRange()
  const number = Number(exact)
  body.categoryId = number
  if (!Number.isSafeInteger(number)) body[EXACT_CATEGORY_ID] = exact
}
