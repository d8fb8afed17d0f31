import type { NewPetRecord, PetStatus } from './pets.js'

const NAMES = [
  'Bella', 'Max', 'Luna', 'Charlie', 'Lucy', 'Cooper', 'Daisy', 'Milo', 'Bailey', 'Rocky', 'Coco', 'Oscar', 'Ruby',
  'Leo', 'Rosie', 'Teddy', 'Molly', 'Zeus', 'Nala', 'Simba', 'Pepper', 'Ginger', 'Shadow', 'Biscuit', 'Mochi',
  'Pip', 'Olive', 'Juniper', 'Ziggy', 'Hazel', 'Clover', 'Nemo', 'Kiwi', 'Sunny', 'Marble', 'Pickles', 'Waffles',
  'Bruno', 'Maple', 'Ollie', 'Willow', 'Jasper', 'Pearl', 'Finn', 'Sasha', 'Tango', 'Cleo', 'Basil', 'Fig', 'Otis'
]
/** Category ids of the demo catalogue: 1 dogs, 2 cats, 3 birds, 4 fish, 5 rabbits, 6 reptiles, 7 rodents, 8 horses. */
const CATEGORIES = 8

/** A small deterministic generator (mulberry32), so a seed gives the same catalogue every time. */
function random (seed: number): () => number {
  let state = seed >>> 0
  return () => {
    state = (state + 0x6d2b79f5) >>> 0
    let t = state
    t = Math.imul(t ^ (t >>> 15), t | 1)
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61)
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296
  }
}

/** Realistic demo animals: common pet names, eight categories, mostly available, some pending, some sold, a few without status. */
export function * demoPets (count: number, seed = 1): Generator<NewPetRecord> {
  const next = random(seed)
  for (let i = 0; i < count; i++) {
    const name = NAMES[Math.floor(next() * NAMES.length)] ?? 'Rex'
    const roll = next()
    const status: PetStatus | undefined = roll < 0.6 ? 'available' : roll < 0.75 ? 'pending' : roll < 0.97 ? 'sold' : undefined
    yield { name, categoryId: 1 + Math.floor(next() * CATEGORIES), ...(status && { status }) }
  }
}

/** What a new or reset sandbox holds (test mode): twenty demo animals across the three statuses. */
export const SANDBOX_SEED: readonly NewPetRecord[] = Object.freeze([...demoPets(20, 1)])
