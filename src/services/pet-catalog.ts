import { createHash } from 'node:crypto'
import { LRUCache } from 'lru-cache'
import { petToJson, type NewPetRecord, type PetRecord } from '../core/pets.js'
import type { IdempotencyKeyRef, ListPetsQuery, PetRepository } from '../storage/store.js'

export interface CatalogPage {
  /** The page as UTF-8 JSON bytes, encoded once for as long as the page is cached. */
  body: Buffer
  count: number
  lastId: number | undefined
  hasMore: boolean
  /** A strong ETag, present only for pages that can never change. */
  etag: string | undefined
}

/**
 * Memory for cached bytes, with an estimate of each entry's own cost (map entry, key,
 * wrapper objects) counted in: these caches are most of what grows with the catalogue,
 * and the whole process aims to stay within 120 MB resident.
 */
const PAGE_CACHE_BYTES = 8 * 1024 * 1024
/** Measured: a cached 20-animal page costs about 900 bytes beyond its body, its header list included. */
const PAGE_OVERHEAD_BYTES = 900
/** Enough for every animal of a 10,000-animal catalogue. */
const PET_CACHE_BYTES = 3 * 1024 * 1024
const PET_OVERHEAD_BYTES = 180
/** Ids remembered as read once while the animal cache was full (about 0.3 MB). */
const ONCE_READ_IDS = 16_384

/**
 * Admission to a full cache on a second read: an animal read once while the cache is full is only
 * remembered, and cached (over another) if it is read again before the memory is cleared. Random
 * reads over a catalogue a hundred times larger than the cache would otherwise insert and evict on
 * nearly every read, and each evicted string is garbage the old generation has to collect.
 */
class SecondReadAdmission {
  private readonly readOnce = new Set<number>()

  admits (id: number): boolean {
    if (this.readOnce.delete(id)) return true
    if (this.readOnce.size >= ONCE_READ_IDS) this.readOnce.clear()
    this.readOnce.add(id)
    return false
  }
}

/** What the read operations need of a catalogue: the live one (PetCatalog) or one account's sandbox. */
export interface CatalogReader {
  cachedById: (id: number) => string | undefined
  findById: (id: number) => Promise<string | undefined>
  cachedPage: (query: ListPetsQuery) => CatalogPage | undefined
  listPage: (query: ListPetsQuery) => Promise<CatalogPage>
}

/** A page's JSON body and, when it came back full and can never change, its strong ETag. */
export function catalogPage (pets: readonly PetRecord[], hasMore: boolean, limit: number): CatalogPage {
  const body = Buffer.from(`[${pets.map(petToJson).join(',')}]`)
  const page = { count: pets.length, lastId: pets.at(-1)?.id, hasMore }
  if (page.count < limit) return { ...page, body, etag: undefined }
  return { ...page, body, etag: `"${createHash('sha256').update(body).digest('base64url').slice(0, 27)}"` }
}

const pageKey = ({ status, afterId, limit }: ListPetsQuery): string => `${status ?? ''}:${afterId}:${limit}`

/** A cached full page without a known successor is re-checked before it is answered (see below). */
export const needsRecheck = (page: CatalogPage): page is CatalogPage & { lastId: number } => !page.hasMore && page.lastId !== undefined

/**
 * Reads of the animal catalogue, cached.
 *
 * Invalidation rule, valid only while v1 stays append-only (no update, no delete):
 * - an animal never changes, so its JSON is cached forever;
 * - a page that came back full (count === limit) never changes either, since new
 *   animals get larger ids and land after it; only its `hasMore` can turn from false
 *   to true, so a cached full page without a successor is re-checked, never trusted;
 * - a short page (the tail) is never cached;
 * - requests that miss the same page at the same moment share one query, but only a full
 *   page with a successor is shared: any other result is read again for the later request;
 * - after a failover (forget()), everything is dropped, and nothing read before it is cached after
 *   it: the old primary may have shown a commit the new one never got, whose id it then reuses.
 * The day animals can change or disappear, this module is the one to rewrite.
 */
export class PetCatalog implements CatalogReader {
  // An animal is kept as the string the database returned: for a body this small a string
  // takes less memory than a Buffer, whose own object outweighs the bytes.
  private readonly pets = new LRUCache<string, string>({ maxSize: PET_CACHE_BYTES, sizeCalculation: (json) => json.length + PET_OVERHEAD_BYTES })
  private readonly petAdmission = new SecondReadAdmission()
  private readonly pages = new LRUCache<string, CatalogPage>({ maxSize: PAGE_CACHE_BYTES, sizeCalculation: (page) => page.body.length + PAGE_OVERHEAD_BYTES })

  /** Pages being read from the database: concurrent misses of one page wait for one query. */
  private readonly loading = new Map<string, Promise<CatalogPage>>()
  /** Moves at each forget(): a read that began before it is answered but not cached. */
  private generation = 0

  constructor (private readonly repository: PetRepository) {}

  create (pet: NewPetRecord, claim?: IdempotencyKeyRef): Promise<{ id: number }> {
    return this.repository.insert(pet, claim)
  }

  /** The animal as JSON when it is cached; undefined says nothing about whether it exists. */
  cachedById (id: number): string | undefined {
    return this.pets.get(String(id))
  }

  /** The animal as JSON, or undefined when no animal has that id. */
  async findById (id: number): Promise<string | undefined> {
    const key = String(id)
    const cached = this.pets.get(key)
    if (cached !== undefined) return cached
    const generation = this.generation
    const pet = await this.repository.findById(id)
    if (pet === undefined) return undefined
    const json = petToJson(pet)
    if (generation === this.generation && (this.pets.calculatedSize + json.length + PET_OVERHEAD_BYTES <= PET_CACHE_BYTES || this.petAdmission.admits(id))) this.pets.set(key, json)
    return json
  }

  /** Drops every cached animal and page: the database may have lost commits that were read (a new primary took over). */
  forget (): void {
    this.generation++
    this.pets.clear()
    this.pages.clear()
    this.loading.clear()
  }

  /** The page when it is cached and needs no re-check; undefined means "ask listPage()". */
  cachedPage (query: ListPetsQuery): CatalogPage | undefined {
    const cached = this.pages.get(pageKey(query))
    return cached !== undefined && !needsRecheck(cached) ? cached : undefined
  }

  async listPage (query: ListPetsQuery): Promise<CatalogPage> {
    const key = pageKey(query)
    const cached = this.pages.get(key)
    if (cached !== undefined) {
      if (!needsRecheck(cached)) return cached
      const generation = this.generation
      if (!await this.repository.existsAfter(query.status, cached.lastId)) return cached
      const grown = { ...cached, hasMore: true }
      if (generation === this.generation) this.pages.set(key, grown)
      return grown
    }
    const inFlight = this.loading.get(key)
    if (inFlight !== undefined) {
      const page = await inFlight.catch(() => undefined)
      // Only a full page with a successor reads the same whatever the moment it was read; anything
      // else loaded before this request began could miss an animal created since.
      if (page?.etag !== undefined && page.hasMore) return page
    }
    const load = this.load(query, key)
    if (!this.loading.has(key)) {
      this.loading.set(key, load)
      const forget = (): void => { if (this.loading.get(key) === load) this.loading.delete(key) }
      load.then(forget, forget)
    }
    return await load
  }

  private async load (query: ListPetsQuery, key: string): Promise<CatalogPage> {
    const generation = this.generation
    const { pets, hasMore } = await this.repository.listPage(query)
    const page = catalogPage(pets, hasMore, query.limit)
    if (page.etag !== undefined && generation === this.generation) this.pages.set(key, page)
    return page
  }
}
