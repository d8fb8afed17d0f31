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

test('gives every entry read since the last eviction a second chance before the entry just added', () => {
  const cache = new LruCache<string>(12, (value) => value.length)
  cache.set('a', 'xxxx')
  cache.set('b', 'xxxx')
  cache.set('c', 'xxxx')
  assert.equal(cache.get('a'), 'xxxx')
  assert.equal(cache.get('b'), 'xxxx')
  assert.equal(cache.get('c'), 'xxxx')
  cache.set('d', 'xxxx')
  assert.equal(cache.size, 3)
  assert.equal(cache.get('d'), 'xxxx', 'the entry just added stays')
  assert.equal(cache.get('a'), undefined, 'all were read, so the oldest goes')
  cache.set('e', 'xxxx')
  assert.equal(cache.get('b'), undefined, 'b lost its mark when it was spared, and was not read since')
  assert.deepEqual(['c', 'd', 'e'].map((key) => cache.get(key)), ['xxxx', 'xxxx', 'xxxx'])
})

test('makes room for a large entry by evicting as many old ones as it takes', () => {
  const cache = new LruCache<string>(10, (value) => value.length)
  for (const key of ['a', 'b', 'c', 'd', 'e']) cache.set(key, 'xx')
  cache.get('e')
  cache.set('big', 'xxxxxxxx')
  assert.equal(cache.get('big'), 'xxxxxxxx')
  assert.equal(cache.get('e'), 'xx')
  assert.equal(cache.size, 2)
})

test('tells whether a value fits without evicting anything', () => {
  const cache = new LruCache<string>(10, (value) => value.length)
  cache.set('a', 'xxxxxx')
  assert.equal(cache.hasRoomFor('xxxx'), true)
  assert.equal(cache.hasRoomFor('xxxxx'), false)
  cache.set('b', 'xxxx')
  assert.equal(cache.hasRoomFor('x'), false)
})
