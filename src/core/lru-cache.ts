interface Entry<V> { value: V, size: number, used: boolean }

/**
 * A map bounded by the total size of its values, as the caller measures them, that evicts
 * the least recently used entries first, in the CLOCK approximation: a hit only marks its
 * entry, and eviction walks the entries in insertion order, giving each marked one a
 * second chance (unmarked, moved to the back) and evicting the first unmarked one.
 *
 * A hit must not touch the Map itself: moving the entry to the back on every hit (delete,
 * then set) made V8 rebuild the Map's whole table every few thousand hits, megabytes of
 * garbage a second under load, all of it old enough to be promoted out of the young
 * generation.
 */
export class LruCache<V> {
  private readonly entries = new Map<string, Entry<V>>()
  private totalSize = 0

  constructor (private readonly maxSize: number, private readonly sizeOf: (value: V) => number) {}

  get (key: string): V | undefined {
    const entry = this.entries.get(key)
    if (entry === undefined) return undefined
    entry.used = true
    return entry.value
  }

  set (key: string, value: V): void {
    const size = this.sizeOf(value)
    if (size > this.maxSize) return
    this.delete(key)
    const added: Entry<V> = { value, size, used: false }
    this.entries.set(key, added)
    this.totalSize += size
    while (this.totalSize > this.maxSize) this.evictOrSpareOldest(added)
  }

  delete (key: string): void {
    const entry = this.entries.get(key)
    if (entry === undefined) return
    this.entries.delete(key)
    this.totalSize -= entry.size
  }

  clear (): void {
    this.entries.clear()
    this.totalSize = 0
  }

  get size (): number {
    return this.entries.size
  }

  /** Whether the value can be added without evicting anything. */
  hasRoomFor (value: V): boolean {
    return this.totalSize + this.sizeOf(value) <= this.maxSize
  }

  /** The entry just added is spared like a marked one: it must not make room for itself. */
  private evictOrSpareOldest (added: Entry<V>): void {
    const oldest = this.entries.entries().next().value
    if (oldest === undefined) return
    const [key, entry] = oldest
    this.entries.delete(key)
    if (entry.used || entry === added) {
      entry.used = false
      this.entries.set(key, entry)
    } else {
      this.totalSize -= entry.size
    }
  }
}
