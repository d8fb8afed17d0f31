// Creates a few animals, then lists every available animal by following the API's `next` links.
//
//   ANIMAL_STORE_URL=http://localhost:8080/v1 ANIMAL_STORE_KEY=ask_... npx tsx client/examples/create-and-list.ts
//
// In your own project, import from '@animal-store/client' instead of '../src/index.js'.
import { AnimalStoreError, createAnimalStoreClient, type NewPet } from '../src/index.js'

const baseUrl = process.env.ANIMAL_STORE_URL ?? 'http://localhost:8080/v1'
const apiKey = process.env.ANIMAL_STORE_KEY
if (apiKey === undefined || apiKey === '') {
  console.error('Set ANIMAL_STORE_KEY to an API key: npx animal-store keys create --email you@example.com')
  process.exit(2)
}

const client = createAnimalStoreClient({ baseUrl, apiKey })
const newPets: NewPet[] = [
  { name: 'Rex', categoryId: 1, status: 'available' },
  { name: 'Tom', categoryId: 2, status: 'available' },
  { name: 'Kiki', categoryId: 3, status: 'available' }
]

try {
  for (const newPet of newPets) {
    const pet = await client.createPet(newPet)
    console.log(`created ${pet.id} ${pet.name}`)
  }
  let count = 0
  // Two animals per page, so even a small catalogue takes several requests.
  for await (const pet of client.allPets({ status: 'available', limit: 2 })) {
    console.log(`listed ${pet.id} ${pet.name} (category ${pet.categoryId})`)
    count++
  }
  console.log(`${count} available animals`)
} catch (error) {
  if (!(error instanceof AnimalStoreError)) throw error
  console.error(`${error.status} ${error.code}: ${error.message} (request ${error.requestId ?? 'unknown'})`)
  process.exitCode = 1
}
