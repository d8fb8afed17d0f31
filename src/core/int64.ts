export const INT64_MIN = -(2n ** 63n)
export const INT64_MAX = 2n ** 63n - 1n

const JSON_NUMBER = /^(-?)(0|[1-9][0-9]*)(?:\.([0-9]+))?(?:[eE]([+-]?[0-9]+))?$/
/** Beyond this exponent a non-zero value cannot fit in int64 (19 digits). */
const MAX_EXPONENT = 19

/**
 * The exact value of a JSON number literal when that value is an integer inside the
 * int64 range (`1`, `1.0`, `1e3`, `-9223372036854775808`), undefined otherwise
 * (`1.5`, `1.0000000000000001`, `1e-400`, `9223372036854775808`). Computed on the
 * digits, never through a double, so nothing is rounded on the way.
 */
export function parseInt64Literal (literal: string): bigint | undefined {
  const match = JSON_NUMBER.exec(literal)
  if (!match) return undefined
  const [, sign = '', whole = '', fraction = '', exponentText = '0'] = match
  let digits = (whole + fraction).replace(/^0+(?=.)/, '')
  let exponent = Number(exponentText) - fraction.length
  if (/^0+$/.test(digits)) return 0n
  while (exponent < 0 && digits.endsWith('0')) {
    digits = digits.slice(0, -1)
    exponent++
  }
  if (exponent < 0 || digits.length + exponent > MAX_EXPONENT + 1) return undefined
  const magnitude = BigInt(digits) * 10n ** BigInt(exponent)
  const value = sign === '-' ? -magnitude : magnitude
  return value >= INT64_MIN && value <= INT64_MAX ? value : undefined
}

/** An integer read exactly from the database (a bigint, or its digits), as the API keeps it: a number when a double holds it exactly, a bigint otherwise. */
export function exactInteger (value: bigint | string): number | bigint {
  const exact = typeof value === 'bigint' ? value : BigInt(value)
  const number = Number(exact)
  return Number.isSafeInteger(number) ? number : exact
}

const POSITIVE_INT64_TEXT = /^[1-9][0-9]{0,18}$/

/**
 * A positive int64 written as the contract wants it in a path (no sign, no leading zero), as a
 * number: exact up to 2^53 − 1 (every id the service assigns), the nearest double beyond, which no
 * animal has. Only an id of 16 digits or more makes a bigint, to be compared with 2^63 − 1.
 */
export function parsePositiveInt64Number (text: string): number | undefined {
  if (!POSITIVE_INT64_TEXT.test(text)) return undefined
  if (text.length <= 15) return Number(text)
  const value = BigInt(text)
  return value <= INT64_MAX ? Number(value) : undefined
}
