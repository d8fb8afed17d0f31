import { test } from 'node:test'
import assert from 'node:assert/strict'
import { validationMessage } from './validation-message.js'

test('names the missing body field', () => {
  assert.equal(validationMessage({ keyword: 'required', instancePath: '', params: { missingProperty: 'name' } }, 'body'), 'name is required')
})

test('names the unknown field and lists the allowed ones', () => {
  assert.equal(
    validationMessage({ keyword: 'additionalProperties', instancePath: '', params: { additionalProperty: 'id' }, parentSchema: { properties: { name: {}, categoryId: {}, status: {} } } }, 'body'),
    'unknown field "id": the allowed fields are name, categoryId, status'
  )
})

test('says which type a field must have', () => {
  assert.equal(validationMessage({ keyword: 'type', instancePath: '/categoryId', params: { type: 'integer' } }, 'body'), 'categoryId must be an integer')
  assert.equal(validationMessage({ keyword: 'type', instancePath: '', params: { type: 'object' } }, 'body'), 'the request body must be a JSON object')
})

test('names query and path parameters as such', () => {
  assert.equal(validationMessage({ keyword: 'maximum', instancePath: '/limit', params: { limit: 100 } }, 'querystring'), 'query parameter limit must be at most 100')
  assert.equal(validationMessage({ keyword: 'enum', instancePath: '/status', params: { allowedValues: ['available', 'pending', 'sold'] } }, 'querystring'),
    'query parameter status must be one of available, pending, sold')
  assert.equal(validationMessage({ keyword: 'minimum', instancePath: '/petId', params: { limit: 1 } }, 'params'), 'path parameter petId must be at least 1')
})
