import { html, type SafeHtml } from '../core/html.js'
import type { UsageCount, UsageOutcome } from '../storage/store.js'

const DAY_MS = 86_400_000
export const OUTCOMES: readonly UsageOutcome[] = ['2xx', '4xx', '5xx']
/** Words for each outcome, in the legend, the text alternative and the tables. */
export const OUTCOME_WORDS: Readonly<Record<UsageOutcome, string>> = { '2xx': 'succeeded (2xx)', '4xx': 'refused (4xx)', '5xx': 'failed (5xx)' }

export type OutcomeCounts = Record<UsageOutcome, number>

export interface DayUsage extends OutcomeCounts {
  /** YYYY-MM-DD, UTC. */
  day: string
  total: number
}

export interface KeyUsageSummary {
  /** One entry per UTC day, oldest first, the current day last. */
  days: DayUsage[]
  byOutcome: OutcomeCounts & { total: number }
  /** Every operation the key called in those days, the most called first. */
  byOperation: Array<OutcomeCounts & { operation: string, total: number }>
}

const zero = (): OutcomeCounts => ({ '2xx': 0, '4xx': 0, '5xx': 0 })

/**
 * Sums hourly counts into the last `days` UTC days (today included), by outcome and by
 * operation. Counts of hours before the first day shown are left out of every total, so the
 * chart, its table and the totals always add up.
 */
export function summarizeUsage (counts: readonly UsageCount[], days: number, now: number): KeyUsageSummary {
  const today = now - (now % DAY_MS)
  const first = today - (days - 1) * DAY_MS
  const byDay: DayUsage[] = Array.from({ length: days }, (_, index) => ({ day: new Date(first + index * DAY_MS).toISOString().slice(0, 10), total: 0, ...zero() }))
  const byOutcome = { total: 0, ...zero() }
  const operations = new Map<string, OutcomeCounts & { operation: string, total: number }>()
  for (const count of counts) {
    const at = count.hour.getTime()
    if (at < first || at >= today + DAY_MS) continue
    const day = byDay[Math.floor((at - first) / DAY_MS)]
    if (day === undefined) continue
    day[count.outcome] += count.count
    day.total += count.count
    byOutcome[count.outcome] += count.count
    byOutcome.total += count.count
    let operation = operations.get(count.operation)
    if (operation === undefined) operations.set(count.operation, operation = { operation: count.operation, total: 0, ...zero() })
    operation[count.outcome] += count.count
    operation.total += count.count
  }
  const byOperation = [...operations.values()].sort((a, b) => b.total - a.total || a.operation.localeCompare(b.operation))
  return { days: byDay, byOutcome, byOperation }
}

/** The smallest of 1, 2, 5, 10, 20, 50, … at or above the value: a round top for the axis. */
function roundTop (value: number): number {
  if (value <= 1) return 1
  const power = 10 ** Math.floor(Math.log10(value))
  for (const step of [1, 2, 5, 10]) if (step * power >= value) return step * power
  return 10 * power
}

const WIDTH = 640
const HEIGHT = 240
/** Room for the counts' labels at the size a phone's stylesheet gives them (portal.css). */
const LEFT = 64
const RIGHT = 8
const TOP = 12
const BOTTOM = 32
/** Fills as presentation attributes, which the CSP allows; portal.css sets the same through classes. */
const FILL: Readonly<Record<UsageOutcome, string>> = { '2xx': '#1a7f37', '4xx': '#b7791f', '5xx': '#b42318' }

const number = (value: number): string => value.toLocaleString('en-US')

/** Text for one day, used by each bar's tooltip. */
const dayText = (day: DayUsage): string =>
  `${day.day}: ${number(day.total)} request${day.total === 1 ? '' : 's'} (${OUTCOMES.map((outcome) => `${number(day[outcome])} ${outcome}`).join(', ')})`

/**
 * The daily requests as a server-rendered SVG bar chart, each bar stacked by outcome (2xx at the
 * bottom), with its text alternative: a title and a description the image is labelled by. No
 * script and no style attribute: colours come from classes (portal.css) and presentation attributes.
 */
export function usageChart (summary: KeyUsageSummary, { id, keyName }: { id: string, keyName: string }): SafeHtml {
  const { days, byOutcome } = summary
  const top = roundTop(Math.max(0, ...days.map((day) => day.total)))
  const plotWidth = WIDTH - LEFT - RIGHT
  const plotHeight = HEIGHT - TOP - BOTTOM
  const slot = plotWidth / days.length
  const barWidth = Math.max(2, slot * 0.7)
  const y = (value: number): number => TOP + plotHeight - (value / top) * plotHeight
  const fixed = (value: number): string => value.toFixed(1)
  const busiest = days.reduce<DayUsage | undefined>((best, day) => (day.total > (best?.total ?? 0) ? day : best), undefined)
  const description = byOutcome.total === 0
    ? `No requests in the ${days.length} days from ${days[0]?.day ?? ''} to ${days[days.length - 1]?.day ?? ''}.`
    : `${number(byOutcome.total)} requests in the ${days.length} days from ${days[0]?.day ?? ''} to ${days[days.length - 1]?.day ?? ''}: ` +
      `${OUTCOMES.map((outcome) => `${number(byOutcome[outcome])} ${OUTCOME_WORDS[outcome]}`).join(', ')}. ` +
      `The busiest day was ${busiest?.day ?? ''}, with ${number(busiest?.total ?? 0)}. The table below the chart has every day's numbers.`

  const gridValues = top === 1 ? [0, 1] : [0, top / 2, top]
  // Every seventh day, counted back from today, so the labels never crowd each other.
  const labelEvery = 7
  return html`<svg class="usage-chart" id="${id}" viewBox="0 0 ${WIDTH} ${HEIGHT}" width="${WIDTH}" height="${HEIGHT}" role="img" aria-labelledby="${id}-title ${id}-desc" xmlns="http://www.w3.org/2000/svg">
  <title id="${id}-title">Requests per day with the key ${keyName}, last ${days.length} days</title>
  <desc id="${id}-desc">${description}</desc>
  <g class="grid">
    ${gridValues.map((value) => html`<line x1="${LEFT}" x2="${WIDTH - RIGHT}" y1="${fixed(y(value))}" y2="${fixed(y(value))}" stroke="#d0d7de" stroke-width="1"></line>
    <text class="axis" x="${LEFT - 6}" y="${fixed(y(value) + 4)}" text-anchor="end" font-size="11" fill="#57606a">${number(value)}</text>`)}
  </g>
  <g class="bars">
    ${days.map((day, index) => {
      const x = LEFT + index * slot + (slot - barWidth) / 2
      let base = 0
      const segments = OUTCOMES.filter((outcome) => day[outcome] > 0).map((outcome) => {
        const from = y(base)
        base += day[outcome]
        // A day with a few requests among thousands still gets a visible sliver.
        const height = Math.max(1, from - y(base))
        return html`<rect class="bar-${outcome}" x="${fixed(x)}" y="${fixed(from - height)}" width="${fixed(barWidth)}" height="${fixed(height)}" fill="${FILL[outcome]}"></rect>`
      })
      return html`<g class="day" data-day="${day.day}" data-total="${day.total}"><title>${dayText(day)}</title>${segments}</g>`
    })}
  </g>
  <g class="x-axis">
    ${days.map((day, index) => (days.length - 1 - index) % labelEvery === 0
      // Today's label ends at the plot's edge: centred under its bar, it would run past the image.
      ? html`<text class="axis" x="${fixed(index === days.length - 1 ? WIDTH - RIGHT : LEFT + (index + 0.5) * slot)}" y="${HEIGHT - 8}" text-anchor="${index === days.length - 1 ? 'end' : 'middle'}" font-size="11" fill="#57606a">${day.day.slice(5)}</text>`
      : '')}
  </g>
</svg>`
}

/** The legend under the chart: which colour is which outcome. */
export function usageLegend (): SafeHtml {
  return html`<ul class="legend">
  ${OUTCOMES.map((outcome) => html`<li><svg class="swatch" aria-hidden="true" viewBox="0 0 10 10" width="10" height="10"><rect class="bar-${outcome}" width="10" height="10" fill="${FILL[outcome]}"></rect></svg> ${OUTCOME_WORDS[outcome]}</li>`)}
</ul>`
}
