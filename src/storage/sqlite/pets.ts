import type Database from 'better-sqlite3'
import { exactInteger } from '../../core/int64.js'
import { PET_STATUSES, type NewPetRecord, type PetRecord, type PetStatus } from '../../core/pets.js'
import { firstFreePetId, type ListPetsQuery, type PetPage, type PetRepository } from '../store.js'
import type { PetWrites } from './pet-writes.js'
import { preparedOnFirstUse } from './statements.js'

const PET_COLUMNS = 'id, name, category_id, status'

/** One page and one row more: whether more follow costs one row, not a second search of the index. */
const pageSql = (statusFilter: string): string => `SELECT ${PET_COLUMNS} FROM pets WHERE ${statusFilter} id > ? ORDER BY id LIMIT ?`

/** A row as better-sqlite3 returns it raw, its integers as bigints: a category id beyond 2^53 stays exact. */
type PetDbRow = [id: bigint, name: string, categoryId: bigint, status: PetStatus | null]

const toPet = ([id, name, categoryId, status]: PetDbRow): PetRecord =>
  ({ id: Number(id), name, categoryId: exactInteger(categoryId), ...(status !== null && { status }) })

/**
 * A statement for each status, the status written into its SQL: SQLite uses a partial index
 * (one per status, migration 4) only for a query whose WHERE names the index's own value.
 */
function byStatus<T> (prepare: (status: PetStatus) => T): Record<PetStatus, T> {
  return Object.fromEntries(PET_STATUSES.map((status) => [status, prepare(status)])) as Record<PetStatus, T>
}

const prepare = (db: Database.Database) => ({
  insertPet: db.prepare('INSERT INTO pets (name, category_id, status, created_at) VALUES (?, ?, ?, ?)'),
  lastPetId: db.prepare('SELECT max(id) FROM pets').pluck().safeIntegers(),
  petById: db.prepare(`SELECT ${PET_COLUMNS} FROM pets WHERE id = ?`).raw().safeIntegers(),
  pageAll: db.prepare(pageSql('')).raw().safeIntegers(),
  pageByStatus: byStatus((status) => db.prepare(pageSql(`status = '${status}' AND`)).raw().safeIntegers()),
  existsAfterAll: db.prepare('SELECT EXISTS (SELECT 1 FROM pets WHERE id > ?)').pluck(),
  existsAfterByStatus: byStatus((status) => db.prepare(`SELECT EXISTS (SELECT 1 FROM pets WHERE status = '${status}' AND id > ?)`).pluck())
})

/** Creates go through the group commit of `petWrites`; bulk loads and reads use the main connection. */
export function petRepository (db: Database.Database, petWrites: PetWrites): PetRepository {
  const sql = preparedOnFirstUse(db, prepare)
  const insertMany = db.transaction((pets: readonly NewPetRecord[]) => {
    // SQLite gives each row the largest id plus one: refused before any would exceed MAX_PET_ID.
    firstFreePetId(sql().lastPetId.get() as bigint | null, pets.length)
    const now = Date.now()
    for (const pet of pets) sql().insertPet.run(pet.name, pet.categoryId, pet.status ?? null, now)
  })
  return {
    insert: petWrites.insert,
    insertMany: async (pets) => { insertMany.immediate(pets) },
    findById: async (id) => {
      const row = sql().petById.get(id) as PetDbRow | undefined
      return row && toPet(row)
    },
    listPage: async ({ status, afterId, limit }: ListPetsQuery): Promise<PetPage> => {
      const rows = (status === undefined ? sql().pageAll.all(afterId, limit + 1) : sql().pageByStatus[status].all(afterId, limit + 1)) as PetDbRow[]
      return { pets: rows.slice(0, limit).map(toPet), hasMore: rows.length > limit }
    },
    existsAfter: async (status: PetStatus | undefined, afterId: number) =>
      (status === undefined ? sql().existsAfterAll.get(afterId) : sql().existsAfterByStatus[status].get(afterId)) === 1
  }
}
