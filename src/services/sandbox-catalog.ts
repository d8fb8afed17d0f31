import { LRUCache } from 'lru-cache'
import type { CursorCodec } from '../core/cursor.js'
import { SANDBOX_SEED } from '../core/demo-pets.js'
import { errors } from '../core/errors.js'
import { petToJson, type NewPetRecord, type PetStatus } from '../core/pets.js'
import { PetReads } from '../http/pet-reads.js'
import type { IdempotencyKeyRef, ListPetsQuery, SandboxRepository } from '../storage/store.js'
import { catalogPage, needsRecheck, type CatalogPage, type CatalogReader } from './pet-catalog.js'

/**
 * Sandbox data has caches of its own, well below the live ones (src/services/pet-catalog.ts): test
 * traffic can never evict a live page or animal, whatever it reads.
 */
const SANDBOX_PAGE_CACHE_BYTES = 2 * 1024 * 1024
const SANDBOX_PET_CACHE_BYTES = 1024 * 1024
const PAGE_OVERHEAD_BYTES = 900
const PET_OVERHEAD_BYTES = 180
/** Readers kept for accounts whose test keys were used lately; beyond that they are made again. */
const MAX_READERS = 10_000
/** A reset on any instance reaches this one within this interval plus one query (as revocations do). */
export const SANDBOX_RESET_POLL_MS = 250

export interface SandboxOptions {
  /** SANDBOX_MAX_PETS. */
  maxPets: number
  cursors: CursorCodec
  /** Base of absolute links, ending in /v1. */
  linkBase: string
  onError: (error: unknown) => void
}

/**
 * Every account's sandbox catalogue (test mode), cached under the same rules as the live one (an
 * animal never changes; a full page never changes but for its successor), with one exception: a
 * reset empties a sandbox. Each cache entry's key carries the account's generation, which moves at
 * each reset seen, here or on any instance (the store's numbered feed of resets, polled): entries of
 * an older generation are never read again and age out of the bounded caches.
 */
export class SandboxCatalog {
  private readonly pets = new LRUCache<string, string>({ maxSize: SANDBOX_PET_CACHE_BYTES, sizeCalculation: (json) => json.length + PET_OVERHEAD_BYTES })
  private readonly pages = new LRUCache<string, CatalogPage>({ maxSize: SANDBOX_PAGE_CACHE_BYTES, sizeCalculation: (page) => page.body.length + PAGE_OVERHEAD_BYTES })
  private readonly readers = new Map<number, PetReads>()
  /** Each reset account's generation; others have `base`. Both only grow, from one counter. */
  private readonly generations = new Map<number, number>()
  private base = 0
  private counter = 0
  private marker: number | undefined
  private polling = false
  private readonly poller: NodeJS.Timeout

  constructor (private readonly repository: SandboxRepository, private readonly options: SandboxOptions) {
    this.poller = setInterval(() => { void this.checkResets() }, SANDBOX_RESET_POLL_MS).unref()
  }

  /** SANDBOX_MAX_PETS. */
  get maxPets (): number {
    return this.options.maxPets
  }

  async start (): Promise<void> {
    this.marker = await this.repository.resetMarker()
  }

  /** The read operations over the account's sandbox. */
  readsFor (accountId: number): PetReads {
    let reads = this.readers.get(accountId)
    if (reads === undefined) {
      if (this.readers.size >= MAX_READERS) this.readers.clear()
      reads = new PetReads(this.readerFor(accountId), this.options.cursors, this.options.linkBase)
      this.readers.set(accountId, reads)
    }
    return reads
  }

  /** The animal of the account's sandbox as JSON, or undefined when it holds none with that id. */
  async findById (accountId: number, id: number): Promise<string | undefined> {
    return await this.readerFor(accountId).findById(id)
  }

  /** Creates the animal in the account's sandbox; 403 sandbox_full beyond SANDBOX_MAX_PETS. */
  async create (accountId: number, pet: NewPetRecord, claim?: IdempotencyKeyRef): Promise<{ id: number }> {
    const created = await this.repository.insert(accountId, pet, claim, { maxPets: this.options.maxPets, seed: SANDBOX_SEED })
    if (created === 'full') throw errors.sandboxFull(this.options.maxPets)
    return created
  }

  /** Empties and reseeds the account's sandbox; this instance forgets it at once, the others within a poll. */
  async reset (accountId: number): Promise<void> {
    await this.repository.reset(accountId, SANDBOX_SEED)
    this.dropAccount(accountId)
  }

  /** Drops every cached sandbox: a new primary took over. */
  forget (): void {
    this.generations.clear()
    this.base = ++this.counter
    this.pets.clear()
    this.pages.clear()
  }

  close (): void {
    clearInterval(this.poller)
  }

  private dropAccount (accountId: number): void {
    this.generations.set(accountId, ++this.counter)
  }

  private prefixOf (accountId: number): string {
    return `${accountId}:${this.generations.get(accountId) ?? this.base}:`
  }

  private readerFor (accountId: number): CatalogReader {
    const { pets, pages, repository } = this
    const pageKey = ({ status, afterId, limit }: ListPetsQuery): string => `${this.prefixOf(accountId)}${status ?? ''}:${afterId}:${limit}`
    return {
      cachedById: (id) => pets.get(this.prefixOf(accountId) + id),
      findById: async (id) => {
        const key = this.prefixOf(accountId) + id
        const cached = pets.get(key)
        if (cached !== undefined) return cached
        const pet = await repository.findById(accountId, id)
        if (pet === undefined) return undefined
        const json = petToJson(pet)
        pets.set(key, json)
        return json
      },
      cachedPage: (query) => {
        const cached = pages.get(pageKey(query))
        return cached !== undefined && !needsRecheck(cached) ? cached : undefined
      },
      listPage: async (query) => {
        const key = pageKey(query)
        const cached = pages.get(key)
        if (cached !== undefined) {
          if (!needsRecheck(cached) || !await repository.existsAfter(accountId, query.status as PetStatus | undefined, cached.lastId)) return cached
          const grown = { ...cached, hasMore: true }
          pages.set(key, grown)
          return grown
        }
        const { pets: found, hasMore } = await repository.listPage(accountId, query)
        const page = catalogPage(found, hasMore, query.limit)
        if (page.etag !== undefined) pages.set(key, page)
        return page
      }
    }
  }

  private async checkResets (): Promise<void> {
    if (this.marker === undefined || this.polling) return
    this.polling = true
    try {
      const { marker, accountIds } = await this.repository.resetsSince(this.marker)
      if (marker === this.marker) return
      if (accountIds === undefined) this.forget()
      else for (const accountId of accountIds) this.dropAccount(accountId)
      this.marker = marker
    } catch (error) {
      this.options.onError(error)
    } finally {
      this.polling = false
    }
  }
}
