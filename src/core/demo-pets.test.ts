import { test } from 'node:test'
import assert from 'node:assert/strict'
import { demoPets } from './demo-pets.js'

test('demoPets gives the asked number of valid animals, the same for the same seed', () => {
  const pets = [...demoPets(1000, 7)]
  assert.equal(pets.length, 1000)
  assert.deepEqual(pets, [...demoPets(1000, 7)])
  assert.notDeepEqual(pets, [...demoPets(1000, 8)])
  for (const pet of pets) {
    assert.ok(pet.name.length > 0)
    assert.ok(Number.isInteger(pet.categoryId) && Number(pet.categoryId) >= 1 && Number(pet.categoryId) <= 8)
    assert.ok(pet.status === undefined || ['available', 'pending', 'sold'].includes(pet.status))
  }
  const statuses = new Set(pets.map((pet) => pet.status))
  assert.equal(statuses.size, 4, 'every status and some without one')
})
