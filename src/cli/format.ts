import { CliError } from './context.js'

export const iso = (date: Date | null): string | null => date?.toISOString() ?? null

/** Left-aligned columns two spaces apart; the first row is the header. */
export function table (rows: string[][], rightAligned: ReadonlySet<number> = new Set()): string {
  const widths = rows[0]?.map((_, column) => Math.max(...rows.map((row) => row[column]?.length ?? 0))) ?? []
  return rows.map((row) => row.map((cell, column) => rightAligned.has(column)
    ? cell.padStart(widths[column] ?? 0)
    : cell.padEnd(widths[column] ?? 0)).join('  ').trimEnd()).join('\n')
}

/** A whole number from `min` to `max` given to an option; CliError naming the option otherwise. */
export function integerOption (text: string | undefined, option: string, fallback: number, min: number, max: number): number {
  if (text === undefined) return fallback
  const value = /^\s*\d{1,9}\s*$/.test(text) ? Number(text) : Number.NaN
  if (!Number.isInteger(value) || value < min || value > max) {
    throw new CliError(`${option} must be a whole number from ${min} to ${max}, not ${JSON.stringify(text)}`)
  }
  return value
}
