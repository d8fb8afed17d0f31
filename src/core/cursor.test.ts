import { test } from 'node:test'
import assert from 'node:assert/strict'
import { createCursorCodec, CURSOR_TEXT, InvalidCursorError } from './cursor.js'

const codec = createCursorCodec('test-secret')

test('a cursor decodes to the position it was made from', () => {
  assert.deepEqual(codec.decode(codec.encode({ afterId: 42, status: 'sold' })), { afterId: 42, status: 'sold' })
  assert.deepEqual(codec.decode(codec.encode({ afterId: 7, status: undefined })), { afterId: 7, status: undefined })
})

test('a cursor made with another secret is refused', () => {
  const foreign = createCursorCodec('other-secret').encode({ afterId: 42, status: undefined })
  assert.throws(() => codec.decode(foreign), InvalidCursorError)
})

test('a tampered cursor is refused', () => {
  const cursor = codec.encode({ afterId: 42, status: undefined })
  const [, mac] = cursor.split('.')
  const forged = `${Buffer.from('43.').toString('base64url')}.${mac}`
  assert.throws(() => codec.decode(forged), InvalidCursorError)
  assert.throws(() => codec.decode(cursor.slice(0, -2)), InvalidCursorError)
})

test('a cursor spelled differently but decoding alike is refused', () => {
  const cursor = codec.encode({ afterId: 42, status: 'sold' })
  for (const variant of [`${cursor}=`, `${cursor}%20`, `${cursor} `, cursor.replace('.', '.=')]) {
    assert.throws(() => codec.decode(variant), InvalidCursorError, variant)
  }
  const last = cursor.at(-1) ?? 'A'
  const alphabet = 'ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-_'
  const sibling = alphabet[alphabet.indexOf(last) ^ 1] ?? 'A'
  assert.throws(() => codec.decode(cursor.slice(0, -1) + sibling), InvalidCursorError, 'spare bits changed')
})

test('malformed cursors are refused', () => {
  for (const cursor of ['', '.', 'abc', 'a.b.c', '%%%.###', 'x'.repeat(500)]) {
    assert.throws(() => codec.decode(cursor), InvalidCursorError, cursor)
  }
})

test('every cursor issued has the shape CURSOR_TEXT states, and one longer than its maxLength is refused', () => {
  const pattern = new RegExp(CURSOR_TEXT.pattern, 'u')
  for (const position of [{ afterId: 1, status: undefined }, { afterId: 9007199254740991, status: 'available' }, { afterId: 42, status: 'pending' }]) {
    const cursor = codec.encode(position)
    assert.match(cursor, pattern)
    assert.ok(cursor.length <= CURSOR_TEXT.maxLength, cursor)
  }
  const [payload = '', mac = ''] = codec.encode({ afterId: 1, status: undefined }).split('.')
  assert.throws(() => codec.decode(`${payload}${'A'.repeat(CURSOR_TEXT.maxLength)}.${mac}`), InvalidCursorError)
})
