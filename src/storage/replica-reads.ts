import type { ApiKeyRepository, ListPetsQuery, PetPage, PetRepository } from './store.js'
import { StoreUnavailableError } from './store.js'

/**
 * Reads answered by a replica only when the answer provably equals the primary's.
 *
 * It rests on two facts. The v1 catalogue is append-only, and ids commit in order (they are taken
 * from one counter row inside the inserting transaction), so a replica that follows the primary
 * always holds a prefix of the primary's catalogue: every animal it has exists, unchanged, on the
 * primary, and the primary may only have more animals, all with larger ids. Hence:
 * - an animal found on the replica is the primary's animal;
 * - a full page (count === limit) whose look-ahead row shows a successor (hasMore) is the primary's
 *   page: the primary has the same animals in that id range and at least one after;
 * - a full page without a known successor is the primary's page, but whether more follow is asked
 *   of the primary (existsAfter);
 * - a short page, an empty page and a missing id may be the replica's lag: read again on the primary.
 *
 * Keys can be revoked, so a key found on a replica is trusted only when that replica has replayed the
 * primary's WAL up to the point where the invalidation marker last moved (read on the primary: every
 * instance polls its feed of invalidated keys): every invalidation the marker has counted is then on
 * the replica too. A key missing on the replica is looked up on the primary. Anything that makes a
 * key unusable (a future expiry change included) must advance the marker, as revoke() does.
 *
 * The day animals can change or disappear, these rules stop holding: see the invalidation rule in
 * src/services/pet-catalog.ts.
 */
export interface ReplicaRouter<Replica, Position> {
  /** A replica to read from now, or undefined: read from the primary. With `covering`, only one that has replayed that position. */
  chooseReplica: (covering?: Position) => Replica | undefined
  /** The primary's current position: everything committed before the call is at or below it. */
  primaryPosition: () => Promise<Position>
  /** A read on the replica failed with a connection error: skip it until it is known up again. */
  replicaFailed: (replica: Replica, error: unknown) => void
}

export interface ReplicaRepositories {
  pets: Pick<PetRepository, 'listPage' | 'findById' | 'existsAfter'>
  apiKeys: Pick<ApiKeyRepository, 'findByHash'>
}

/** Reads by where they were answered: wholly by a replica, by a replica with one question to the primary, or by the primary. */
export interface ReplicaReadCounts { replica: number, confirmed: number, primary: number }

export class ReplicaReads<Replica, Position> {
  readonly counts: ReplicaReadCounts = { replica: 0, confirmed: 0, primary: 0 }
  /** The revocation marker last seen, and the primary's position just after it was read. */
  private keyFence: { marker: number, position: Position | undefined } | undefined

  constructor (
    private readonly router: ReplicaRouter<Replica, Position>,
    private readonly repositoriesOf: (replica: Replica) => ReplicaRepositories
  ) {}

  pets (primary: PetRepository): PetRepository {
    return {
      insert: primary.insert,
      insertMany: primary.insertMany,
      findById: async (id) => {
        const pet = await this.onReplica(undefined, async (replica) => await replica.pets.findById(id))
        if (pet !== undefined) return this.answered('replica', pet)
        return this.answered('primary', await primary.findById(id))
      },
      listPage: async (query: ListPetsQuery): Promise<PetPage> => {
        const page = await this.onReplica(undefined, async (replica) => await replica.pets.listPage(query))
        const lastId = page?.pets.at(-1)?.id
        if (page !== undefined && page.pets.length === query.limit && lastId !== undefined) {
          if (page.hasMore) return this.answered('replica', page)
          return this.answered('confirmed', { ...page, hasMore: await primary.existsAfter(query.status, lastId) })
        }
        return this.answered('primary', await primary.listPage(query))
      },
      existsAfter: async (status, afterId) => {
        if (await this.onReplica(undefined, async (replica) => await replica.pets.existsAfter(status, afterId)) === true) return this.answered('replica', true)
        return this.answered('primary', await primary.existsAfter(status, afterId))
      }
    }
  }

  apiKeys (primary: ApiKeyRepository): ApiKeyRepository {
    return {
      ...primary,
      revocationMarker: async () => await this.fenced(await primary.revocationMarker()),
      invalidationsSince: async (since) => {
        const invalidations = await primary.invalidationsSince(since)
        await this.fenced(invalidations.marker)
        return invalidations
      },
      findByHash: async (hash) => {
        const position = this.keyFence?.position
        const row = position === undefined ? undefined : await this.onReplica(position, async (replica) => await replica.apiKeys.findByHash(hash))
        return row ?? await primary.findByHash(hash)
      }
    }
  }

  /** Moves the fence when the marker moved: read after the marker, any invalidation it counts committed at or below this position. */
  private async fenced (marker: number): Promise<number> {
    if (this.keyFence?.marker !== marker || this.keyFence.position === undefined) {
      const position = await this.router.primaryPosition().catch(() => undefined)
      this.keyFence = { marker, position }
    }
    return marker
  }

  private answered<T>(where: keyof ReplicaReadCounts, value: T): T {
    this.counts[where]++
    return value
  }

  /** The replica's answer, or undefined when there is no replica to ask or it failed (then the primary answers). */
  private async onReplica<T>(covering: Position | undefined, read: (replica: ReplicaRepositories) => Promise<T>): Promise<T | undefined> {
    const replica = this.router.chooseReplica(covering)
    if (replica === undefined) return undefined
    try {
      return await read(this.repositoriesOf(replica))
    } catch (error) {
      // A replica that fails, whatever the reason (down, a query cancelled by a conflict with recovery,
      // a timeout), costs the client nothing but the time it took: the primary answers instead.
      if (error instanceof StoreUnavailableError) this.router.replicaFailed(replica, error)
      return undefined
    }
  }
}
