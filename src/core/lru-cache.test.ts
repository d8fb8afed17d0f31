import { test } from 'node:test'
import assert from 'node:assert/strict'
import { LruCache } from './lru-cache.js'

test('evicts the least recently used entries once the size budget is exceeded', () => {
  const cache = new LruCache<string>(10, (value) => value.length)
  cache.set('a', 'xxxx')
  cache.set('b', 'xxxx')
  assert.equal(cache.get('a'), 'xxxx')
  cache.set('c', 'xxxx')
  assert.equal(cache.get('b'), undefined)
  assert.equal(cache.get('a'), 'xxxx')
  assert.equal(cache.get('c'), 'xxxx')
})

test('ignores a value larger than the whole budget and replaces an existing key', () => {
  const cache = new LruCache<string>(4, (value) => value.length)
  cache.set('big', 'xxxxx')
  assert.equal(cache.get('big'), undefined)
  cache.set('k', 'xx')
  cache.set('k', 'xxx')
  assert.equal(cache.size, 1)
  assert.equal(cache.get('k'), 'xxx')
  cache.clear()
  assert.equal(cache.size, 0)
})
