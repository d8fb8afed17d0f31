import { test } from 'node:test'
import assert from 'node:assert/strict'
import { petToJson } from './pets.js'

test('petToJson omits a missing status rather than writing null', () => {
  assert.equal(petToJson({ id: 1, name: 'Rex', categoryId: 2 }), '{"id":1,"name":"Rex","categoryId":2}')
})

test('petToJson writes a large categoryId digit for digit', () => {
  const json = petToJson({ id: 3, name: 'A "quoted" ü', categoryId: 9223372036854775807n, status: 'sold' })
  assert.equal(json, '{"id":3,"name":"A \\"quoted\\" ü","categoryId":9223372036854775807,"status":"sold"}')
})
