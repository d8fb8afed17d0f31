import { test } from 'node:test'
import assert from 'node:assert/strict'
import { tolerantUrl } from './tolerant-url.js'

test('tolerantUrl leaves ordinary and validly escaped URLs alone', () => {
  for (const url of ['/v1/pets', '/v1/pets?limit=5&status=sold', '/v1/pets/%31', '/v1/p%C3%A9ts?x=%ZZ']) {
    assert.equal(tolerantUrl(url), url)
  }
})

test('tolerantUrl escapes the percent signs of a path that cannot be decoded', () => {
  assert.equal(tolerantUrl('/v1/pets/%ZZ'), '/v1/pets/%25ZZ')
  assert.equal(tolerantUrl('/%v1/pets'), '/%25v1/pets')
  assert.equal(tolerantUrl('/v1/pets/%'), '/v1/pets/%25')
  assert.equal(tolerantUrl('/v1/pets/%FF?limit=1'), '/v1/pets/%25FF?limit=1')
})

test('tolerantUrl keeps the valid escapes of a path it repairs', () => {
  assert.equal(tolerantUrl('/v1/%70ets/%'), '/v1/%70ets/%25')
  assert.equal(tolerantUrl('/v1/pets/%41%ZZ'), '/v1/pets/%41%25ZZ')
})
