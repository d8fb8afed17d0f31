import { mkdtempSync, rmSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { test, type TestContext } from 'node:test'
import assert from 'node:assert/strict'
import { openSqliteStore } from '../storage/sqlite/sqlite-store.js'
import type { PetRepository, Store } from '../storage/store.js'
import { PetCatalog } from './pet-catalog.js'

/** A SQLite store in a temporary folder with `count` available animals, ids 1 to `count`. */
async function storeWithAnimals (t: TestContext, count: number): Promise<Store> {
  const dir = mkdtempSync(join(tmpdir(), 'animal-store-catalog-'))
  const store = openSqliteStore(join(dir, 'catalog.sqlite'))
  t.after(async () => { await store.close(); rmSync(dir, { recursive: true, force: true }) })
  await store.migrate()
  await store.pets.insertMany(Array.from({ length: count }, (_, i) => ({ name: `animal ${i + 1}`, categoryId: 1, status: 'available' as const })))
  return store
}

test('concurrent misses of a full page share one query; of a tail page, they do not', async (t) => {
  const store = await storeWithAnimals(t, 45)

  let queries = 0
  const counted: PetRepository = Object.assign(Object.create(store.pets) as PetRepository, {
    listPage: async (query: Parameters<PetRepository['listPage']>[0]) => { queries++; return await store.pets.listPage(query) }
  })
  const catalog = new PetCatalog(counted)

  const [first, second] = await Promise.all([catalog.listPage({ status: undefined, afterId: 0, limit: 20 }), catalog.listPage({ status: undefined, afterId: 0, limit: 20 })])
  assert.equal(queries, 1)
  assert.equal(first, second)
  assert.ok(first.hasMore && first.etag !== undefined)

  queries = 0
  const tails = await Promise.all([catalog.listPage({ status: undefined, afterId: 40, limit: 20 }), catalog.listPage({ status: undefined, afterId: 40, limit: 20 })])
  assert.equal(queries, 2, 'a short page is read again for each request')
  assert.deepEqual(tails.map((page) => page.count), [5, 5])
})

test('answers from the cache without waiting only what it would answer unchecked', async (t) => {
  const store = await storeWithAnimals(t, 40)
  const catalog = new PetCatalog(store.pets)
  const page = (afterId: number) => ({ status: undefined, afterId, limit: 20 })

  assert.equal(catalog.cachedById(1), undefined, 'not read yet')
  assert.equal(catalog.cachedById(41), undefined, 'no such animal')
  const pet = await catalog.findById(1)
  assert.equal(catalog.cachedById(1), pet)
  assert.equal(await catalog.findById(41), undefined)
  assert.equal(catalog.cachedById(41), undefined, 'a missing animal is not cached')

  assert.equal(catalog.cachedPage(page(0)), undefined)
  const first = await catalog.listPage(page(0))
  assert.equal(catalog.cachedPage(page(0)), first, 'a full page with a successor')

  // The last full page: cached, but until an animal follows it, every read asks the database.
  const last = await catalog.listPage(page(20))
  assert.equal(last.count, 20)
  assert.equal(last.hasMore, false)
  assert.equal(catalog.cachedPage(page(20)), undefined)
  await store.pets.insert({ name: 'animal 41', categoryId: 1, status: 'available' }, undefined)
  const grown = await catalog.listPage(page(20))
  assert.equal(grown.hasMore, true)
  assert.equal(catalog.cachedPage(page(20)), grown)
})

test('a full animal cache takes an animal in on its second read, not its first', async (t) => {
  const store = await storeWithAnimals(t, 20_000)
  const catalog = new PetCatalog(store.pets)

  let id = 1
  for (; id <= 20_000; id++) {
    await catalog.findById(id)
    if (catalog.cachedById(id) === undefined) break
  }
  assert.ok(id > 1000 && id < 20_000, `every animal up to the one that would not fit is cached (${id})`)
  const firstLeftOut = id
  assert.ok(catalog.cachedById(firstLeftOut - 1) !== undefined)
  assert.equal(await catalog.findById(firstLeftOut + 1), JSON.stringify({ id: firstLeftOut + 1, name: `animal ${firstLeftOut + 1}`, categoryId: 1, status: 'available' }), 'answered all the same')
  assert.equal(catalog.cachedById(firstLeftOut + 1), undefined, 'not cached on its first read')
  await catalog.findById(firstLeftOut)
  assert.ok(catalog.cachedById(firstLeftOut) !== undefined, 'cached on its second read')
})

test('forget() drops every cached animal and page, and what was being read when it was called is answered but not cached', async (t) => {
  const store = await storeWithAnimals(t, 45)
  // While holding, each read waits after the database answered, until the test lets it go.
  let holding = false
  const held: Array<() => void> = []
  let bothHeld: () => void = () => {}
  const hold = async (): Promise<void> => {
    if (!holding) return
    await new Promise<void>((resolve) => {
      held.push(resolve)
      if (held.length === 2) bothHeld()
    })
  }
  const heldPets: PetRepository = Object.assign(Object.create(store.pets) as PetRepository, {
    findById: async (id: number) => { const pet = await store.pets.findById(id); await hold(); return pet },
    listPage: async (query: Parameters<PetRepository['listPage']>[0]) => { const page = await store.pets.listPage(query); await hold(); return page }
  })
  const catalog = new PetCatalog(heldPets)
  const first = { status: undefined, afterId: 0, limit: 20 }
  const second = { status: undefined, afterId: 20, limit: 20 }
  await catalog.findById(1)
  await catalog.listPage(first)
  assert.ok(catalog.cachedById(1) !== undefined && catalog.cachedPage(first) !== undefined)

  catalog.forget()
  assert.equal(catalog.cachedById(1), undefined)
  assert.equal(catalog.cachedPage(first), undefined)

  // Reads that began before a failover was noticed may hold what the new primary never got.
  holding = true
  const reached = new Promise<void>((resolve) => { bothHeld = resolve })
  const reading = catalog.findById(2)
  const listing = catalog.listPage(second)
  await reached
  catalog.forget()
  holding = false
  for (const resolve of held) resolve()
  assert.ok(await reading !== undefined)
  assert.equal((await listing).count, 20)
  assert.equal(catalog.cachedById(2), undefined)
  assert.equal(catalog.cachedPage(second), undefined)

  // Read again after the failover, they are cached as usual.
  await catalog.findById(2)
  await catalog.listPage(second)
  assert.ok(catalog.cachedById(2) !== undefined && catalog.cachedPage(second) !== undefined)
})
