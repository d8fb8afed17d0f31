/**
 * npm run bench:page-query: what reading one uncached page costs the store, in isolation (no
 * HTTP, no caches), on a catalogue of BENCH_LARGE (1,000,000) animals seeded with
 * `animal-store seed`: the store's listPage walked through the whole catalogue, page after
 * page, with and without a status filter, on SQLite and, when it answers, the local
 * PostgreSQL. This is the work a deep `next`-link walk does on every page it reaches first.
 * Median of 5 walks of 5,000 pages each, in microseconds a page.
 */
import { mkdtempSync, rmSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import type { PetStatus } from '../src/core/pets.js'
import { openPostgresStore } from '../src/storage/postgres/postgres-store.js'
import { openSqliteStore } from '../src/storage/sqlite/sqlite-store.js'
import type { Store } from '../src/storage/store.js'
import { dropPostgresDatabase, seededPostgres, seededSqlite } from './datasets.js'
import { median } from './measure.js'

const LARGE = Number(process.env.BENCH_LARGE ?? 1_000_000)
const PAGES = 5000
const WALKS = 5
const LIMIT = 20

/** Microseconds a page over one walk of PAGES pages, starting again at the top when the walk ends. */
async function walk (store: Store, status: PetStatus | undefined): Promise<number> {
  let afterId = 0
  const started = performance.now()
  for (let page = 0; page < PAGES; page++) {
    const { pets, hasMore } = await store.pets.listPage({ status, afterId, limit: LIMIT })
    const lastId = pets.at(-1)?.id
    afterId = hasMore && lastId !== undefined ? lastId : 0
  }
  return (performance.now() - started) * 1000 / PAGES
}

async function measure (engine: string, store: Store): Promise<void> {
  try {
    for (const status of [undefined, 'sold'] as const) {
      await walk(store, status)
      const figures: number[] = []
      for (let round = 0; round < WALKS; round++) figures.push(await walk(store, status))
      console.log(`${engine.padEnd(10)} ${(status === undefined ? 'all' : `status=${status}`).padEnd(11)}  ${median(figures).toFixed(1).padStart(6)} µs a page (walks: ${figures.map((figure) => figure.toFixed(1)).join(', ')})`)
    }
  } finally {
    await store.close()
  }
}

const dir = mkdtempSync(join(tmpdir(), 'animal-store-page-query-'))
try {
  console.log(`Seeding ${LARGE.toLocaleString('en')} animals …`)
  const sqlite = await seededSqlite(join(dir, 'large.sqlite'), LARGE)
  await measure('SQLite', openSqliteStore(sqlite.path))
  const postgres = await seededPostgres('animal_store_bench_page_query', LARGE)
  if (postgres !== undefined) {
    try {
      await measure('PostgreSQL', openPostgresStore(postgres.url, { poolSize: 1, onError: (error) => { throw error } }))
    } finally {
      await dropPostgresDatabase('animal_store_bench_page_query')
    }
  }
} finally {
  rmSync(dir, { recursive: true, force: true })
}
