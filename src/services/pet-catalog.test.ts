import { mkdtempSync, rmSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { test } from 'node:test'
import assert from 'node:assert/strict'
import { openSqliteStore } from '../storage/sqlite/sqlite-store.js'
import type { PetRepository } from '../storage/store.js'
import { PetCatalog } from './pet-catalog.js'

test('concurrent misses of a full page share one query; of a tail page, they do not', async (t) => {
  const dir = mkdtempSync(join(tmpdir(), 'animal-store-catalog-'))
  const store = openSqliteStore(join(dir, 'catalog.sqlite'))
  t.after(async () => { await store.close(); rmSync(dir, { recursive: true, force: true }) })
  await store.migrate()
  await store.pets.insertMany(Array.from({ length: 45 }, (_, i) => ({ name: `animal ${i + 1}`, categoryId: 1, status: 'available' as const })))

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
