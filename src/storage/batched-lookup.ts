interface Waiter<Value> {
  resolve: (value: Value | undefined) => void
  reject: (error: unknown) => void
}

/**
 * Lookups by key asked for in the same turn of the event loop, answered together by one call
 * of `lookUpMany`: when many clients read rows that are not cached, one query serves them all
 * instead of each waiting for a pooled connection and a round trip of its own. A key asked for
 * twice is looked up once. Batches may overlap; a failed call rejects exactly its own keys.
 */
export class BatchedLookup<Key, Value> {
  private waiting = new Map<Key, Array<Waiter<Value>>>()
  private scheduled = false

  constructor (
    /** The values found, by key; a key missing from the map has no value. */
    private readonly lookUpMany: (keys: Key[]) => Promise<ReadonlyMap<Key, Value>>,
    private readonly maxKeys: number
  ) {}

  get (key: Key): Promise<Value | undefined> {
    return new Promise((resolve, reject) => {
      const waiters = this.waiting.get(key)
      if (waiters === undefined) this.waiting.set(key, [{ resolve, reject }])
      else waiters.push({ resolve, reject })
      if (!this.scheduled) {
        this.scheduled = true
        setImmediate(() => { this.flush() })
      }
    })
  }

  private flush (): void {
    this.scheduled = false
    const batch = this.waiting
    this.waiting = new Map()
    const keys = [...batch.keys()]
    for (let start = 0; start < keys.length; start += this.maxKeys) {
      const chunk = keys.slice(start, start + this.maxKeys)
      const settle = (each: (waiter: Waiter<Value>, key: Key) => void): void => {
        for (const key of chunk) for (const waiter of batch.get(key) ?? []) each(waiter, key)
      }
      this.lookUpMany(chunk).then(
        (found) => { settle((waiter, key) => { waiter.resolve(found.get(key)) }) },
        (error: unknown) => { settle((waiter) => { waiter.reject(error) }) })
    }
  }
}
