const UNITS: ReadonlyArray<[number, string]> = [[86_400_000, 'day'], [3_600_000, 'hour'], [60_000, 'minute'], [1000, 'second']]

/** A span of time in its largest fitting unit, rounded, as a person would say it: `30 days`, `12 hours`, `90 minutes`. */
export function spanText (ms: number): string {
  if (ms <= 0) return '0 seconds'
  for (const [size, unit] of UNITS) {
    if (ms >= size * 2 || size === 1000) {
      const count = Math.round(ms / size)
      return `${count} ${unit}${count === 1 ? '' : 's'}`
    }
  }
  return `${ms} ms`
}
