import { type CursorCodec, InvalidCursorError } from '../core/cursor.js'
import { errors } from '../core/errors.js'
import { MAX_PET_ID, type PetStatus } from '../core/pets.js'
import type { CatalogPage, CatalogReader } from '../services/pet-catalog.js'
import type { Answer } from './exchange.js'
import { ifNoneMatchHits, JSON_TYPE, nextPageLink } from './headers.js'

export interface ListPetsRequest {
  limit: number
  status: PetStatus | undefined
  cursor: string | undefined
  ifNoneMatch: string | undefined
}

/** A successful answer to a read: 200, or 304 without a body. */
type ReadAnswer = Answer & { statusCode: 200 | 304 }

const petAnswer = (body: string): ReadAnswer =>
  ({ statusCode: 200, headers: ['content-type', JSON_TYPE, 'content-length', String(Buffer.byteLength(body))], body })

/**
 * The two read operations once their input is valid: listPets and getPet, each with a
 * synchronous form for an answer the catalogue has cached.
 */
export class PetReads {
  /** A page's two answers, made once for as long as the page is cached: a cached read allocates nothing for its answer. */
  private readonly pageAnswers = new WeakMap<CatalogPage, { ok: ReadAnswer, notModified: ReadAnswer }>()

  constructor (
    private readonly catalog: CatalogReader,
    private readonly cursors: CursorCodec,
    /** Base of absolute links, ending in /v1. */
    private readonly linkBase: string
  ) {}

  /** Throws the 400 ApiError for a cursor this service did not issue, or issued for another status. */
  async listPets (request: ListPetsRequest): Promise<ReadAnswer> {
    const { limit, status, cursor } = request
    const afterId = cursor === undefined ? 0 : this.positionOf(cursor, status)
    return this.pageAnswer(await this.catalog.listPage({ status, afterId, limit }), request)
  }

  /** The answer when its page is cached, without waiting; undefined means "ask listPets()", which also judges the cursor. */
  cachedListPets (request: ListPetsRequest): ReadAnswer | undefined {
    const { limit, status, cursor } = request
    let afterId = 0
    if (cursor !== undefined) {
      try {
        afterId = this.positionOf(cursor, status)
      } catch {
        return undefined
      }
    }
    const page = this.catalog.cachedPage({ status, afterId, limit })
    return page === undefined ? undefined : this.pageAnswer(page, request)
  }

  /** The animal, or undefined when no animal has that id. */
  async getPet (petId: number): Promise<ReadAnswer | undefined> {
    // Ids are assigned from 1 to MAX_PET_ID: a larger one names no animal.
    const body = petId <= MAX_PET_ID ? await this.catalog.findById(petId) : undefined
    return body === undefined ? undefined : petAnswer(body)
  }

  /** The animal when it is cached, without waiting; undefined means "ask getPet()". */
  cachedPet (petId: number): ReadAnswer | undefined {
    const body = this.catalog.cachedById(petId)
    return body === undefined ? undefined : petAnswer(body)
  }

  private pageAnswer (page: CatalogPage, { limit, status, ifNoneMatch }: ListPetsRequest): ReadAnswer {
    let answers = this.pageAnswers.get(page)
    if (answers === undefined) {
      answers = this.answersOf(page, { limit, status })
      this.pageAnswers.set(page, answers)
    }
    return page.etag !== undefined && ifNoneMatch !== undefined && ifNoneMatchHits(ifNoneMatch, page.etag) ? answers.notModified : answers.ok
  }

  private answersOf (page: CatalogPage, { limit, status }: { limit: number, status: PetStatus | undefined }): { ok: ReadAnswer, notModified: ReadAnswer } {
    const notModified: string[] = []
    if (page.hasMore && page.lastId !== undefined) {
      notModified.push('link', nextPageLink(this.linkBase, { limit, status, cursor: this.cursors.encode({ afterId: page.lastId, status }) }))
    }
    if (page.etag !== undefined) notModified.push('etag', page.etag)
    return {
      ok: { statusCode: 200, headers: ['content-type', JSON_TYPE, 'content-length', String(page.body.length), ...notModified], body: page.body },
      notModified: { statusCode: 304, headers: notModified, body: undefined }
    }
  }

  private positionOf (cursor: string, status: PetStatus | undefined): number {
    try {
      const position = this.cursors.decode(cursor)
      if (position.status !== status) throw errors.cursorOfOtherFilter()
      return position.afterId
    } catch (error) {
      if (!(error instanceof InvalidCursorError)) throw error
      throw errors.invalidCursor()
    }
  }
}
