import DataLoader from 'dataloader'

/** Lookups of one key, batched. */
export interface BatchedLookup<Key, Value> { get: (key: Key) => Promise<Value | undefined> }

/**
 * Lookups by key asked for in the same turn of the event loop, answered together by one call
 * of `lookUpMany` (dataloader): when many clients read rows that are not cached, one query serves them all
 * instead of each waiting for a pooled connection and a round trip of its own. A key asked for
 * twice is looked up once. Batches may overlap; a failed call rejects exactly its own keys.
 */
export function batchedLookup<Key, Value> (
  /** The values found, by key; a key missing from the map has no value. */
  lookUpMany: (keys: Key[]) => Promise<ReadonlyMap<Key, Value>>,
  maxKeys: number
): BatchedLookup<Key, Value> {
  const loader: DataLoader<Key, Value | undefined> = new DataLoader(async (keys) => {
    // The loader's cache only joins the lookups of one batch: a value is read again in the next one.
    loader.clearAll()
    const found = await lookUpMany([...keys])
    return keys.map((key) => found.get(key))
  }, { maxBatchSize: maxKeys, batchScheduleFn: (dispatch) => { setImmediate(dispatch) } })
  return { get: async (key) => await loader.load(key) }
}
