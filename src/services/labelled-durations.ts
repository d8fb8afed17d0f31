import type { Metric, Registry } from 'prom-client'

interface Series {
  labels: Record<string, string>
  count: number
  sum: number
  /** Observations per bucket, not cumulative; the last slot is beyond the largest bound. */
  buckets: number[]
}

interface MetricName { name: string, help: string }

interface ExportedValue { metricName?: string, labels: Record<string, string | number>, value: number }

/**
 * Durations by a fixed set of labels (requests by method, route and status; storage calls by
 * operation), counted in plain numbers on the hot path and turned into Prometheus series only
 * when scraped.
 *
 * Speed code (docs/performance.md): prom-client's labelled inc() and observe() hash the label set on every call.
 */
export class LabelledDurations {
  private readonly series = new Map<string, Series>()
  /** The same series by their label values, one level per label: a request finds its series without building a key. */
  private readonly byValues = new Map<string, unknown>()

  constructor (private readonly labelNames: readonly string[], private readonly bounds: readonly number[]) {}

  /** One value per label name, in the same order (at most three labels). */
  record (seconds: number, first: string, second?: string, third?: string): void {
    const depth = this.labelNames.length
    let found: unknown = this.byValues.get(first)
    if (depth > 1 && found !== undefined) found = (found as Map<string, unknown>).get(second ?? '')
    if (depth > 2 && found !== undefined) found = (found as Map<string, unknown>).get(third ?? '')
    const series = (found as Series | undefined) ?? this.addSeries([first, second ?? '', third ?? ''].slice(0, depth))
    series.count++
    series.sum += seconds
    let bucket = 0
    while (bucket < this.bounds.length && seconds > (this.bounds[bucket] ?? Infinity)) bucket++
    series.buckets[bucket] = (series.buckets[bucket] ?? 0) + 1
  }

  private addSeries (values: string[]): Series {
    const labels = Object.fromEntries(this.labelNames.map((name, index) => [name, values[index] ?? '']))
    const series: Series = { labels, count: 0, sum: 0, buckets: new Array<number>(this.bounds.length + 1).fill(0) }
    this.series.set(values.join(' '), series)
    let level = this.byValues
    values.forEach((value, index) => {
      if (index === values.length - 1) {
        level.set(value, series)
        return
      }
      let next = level.get(value) as Map<string, unknown> | undefined
      if (next === undefined) {
        next = new Map()
        level.set(value, next)
      }
      level = next
    })
    return series
  }

  /** Registers the histogram and, when named, a counter of the same observations, read from these numbers at each scrape. */
  registerIn (registry: Registry, histogram: MetricName, counter?: MetricName): void {
    registry.registerMetric(this.asMetric(histogram.name, histogram.help, 'histogram', () => this.histogramValues(histogram.name)))
    if (counter !== undefined) registry.registerMetric(this.asMetric(counter.name, counter.help, 'counter', () => this.counterValues()))
  }

  private counterValues (): ExportedValue[] {
    return [...this.series.values()].map((series) => ({ labels: series.labels, value: series.count }))
  }

  private histogramValues (name: string): ExportedValue[] {
    const values: ExportedValue[] = []
    for (const series of this.series.values()) {
      let cumulative = 0
      this.bounds.forEach((bound, index) => {
        cumulative += series.buckets[index] ?? 0
        values.push({ metricName: `${name}_bucket`, labels: { le: bound, ...series.labels }, value: cumulative })
      })
      values.push(
        { metricName: `${name}_bucket`, labels: { le: '+Inf', ...series.labels }, value: series.count },
        { metricName: `${name}_sum`, labels: series.labels, value: series.sum },
        { metricName: `${name}_count`, labels: series.labels, value: series.count }
      )
    }
    return values
  }

  /**
   * The shape a prom-client registry reads from a metric (what its own Counter and Histogram
   * return from get()), so exposition, JSON and cluster aggregation all work unchanged.
   */
  private asMetric (name: string, help: string, type: 'counter' | 'histogram', values: () => ExportedValue[]): Metric {
    const metric = {
      name,
      help,
      type,
      aggregator: 'sum',
      get: async () => ({ name, help, type, aggregator: 'sum', values: values() }),
      reset: () => {
        this.series.clear()
        this.byValues.clear()
      }
    }
    return metric as unknown as Metric
  }
}
