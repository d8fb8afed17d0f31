export const INT64_MIN = -(2n ** 63n)
export const INT64_MAX = 2n ** 63n - 1n

const DECIMAL_INTEGER = /^-?(0|[1-9][0-9]*)$/

/**
 * The exact value of a JSON integer literal, or undefined when the literal is not
 * a plain decimal integer inside the int64 range (fractions, exponents, overflow).
 */
export function parseInt64Literal (literal: string): bigint | undefined {
  if (!DECIMAL_INTEGER.test(literal)) return undefined
  const value = BigInt(literal)
  return value >= INT64_MIN && value <= INT64_MAX ? value : undefined
}

/** A positive int64 written as the contract wants it in a path: no sign, no leading zero. */
export function parsePositiveInt64Text (text: string): bigint | undefined {
  if (!/^[1-9][0-9]{0,18}$/.test(text)) return undefined
  const value = BigInt(text)
  return value <= INT64_MAX ? value : undefined
}
