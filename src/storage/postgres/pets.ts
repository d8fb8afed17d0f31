import { exactInteger } from '../../core/int64.js'
import { MAX_PET_ID, type NewPetRecord, type PetRecord, type PetStatus } from '../../core/pets.js'
import { batchedLookup } from '../batched-lookup.js'
import { GroupCommit } from '../group-commit.js'
import { PetIdsExhaustedError, type IdempotencyKeyRef, type PetRepository } from '../store.js'
import { onClient, type Connection, type Statement } from './connection.js'

const DEFAULT_WRITE_BATCH = 256
/** Rows per statement when seeding: each statement then carries a few hundred kilobytes. */
const BULK_ROWS_PER_STATEMENT = 5000
/** Animals read by one query when many are asked for at once (random reads of a large catalogue). */
const MAX_IDS_PER_LOOKUP = 500

const PET_COLUMNS = 'id, name, category_id, status'

/** One page and one row more: whether more follow costs one row, not a second search of the index. */
const pageSql = (statusFilter: string): string => `SELECT ${PET_COLUMNS} FROM pets WHERE ${statusFilter} id > $1 ORDER BY id LIMIT $2`

const PAGE_ALL = pageSql('')
const PAGE_BY_STATUS = pageSql('status = $3 AND')

/** A row as pg returns it: BIGINT columns as their digits, so a category id beyond 2^53 stays exact. */
interface PetDbRow { id: string, name: string, category_id: string, status: PetStatus | null }

const toPet = (row: PetDbRow): PetRecord =>
  ({ id: Number(row.id), name: row.name, categoryId: exactInteger(row.category_id), ...(row.status !== null && { status: row.status }) })

interface PetWrite {
  pet: NewPetRecord
  claim: IdempotencyKeyRef | undefined
}

export type PetWrites = GroupCommit<PetWrite, { id: number }>

/** Concurrent creates share one transaction (group commit), up to `batchSize` of them. */
export function petWrites (db: Connection, batchSize = DEFAULT_WRITE_BATCH, batchWaitMs?: number): PetWrites {
  /** A batch without idempotency keys is one statement; claimed keys are completed in the same transaction. */
  const insertBatch = async (batch: PetWrite[]): Promise<Array<{ id: number }>> => {
    const pets = batch.map((write) => write.pet)
    const firstId = batch.every((write) => write.claim === undefined)
      ? await insertPets(db.onPool, pets)
      : await db.transaction(async (client) => {
        const firstId = await insertPets(onClient(client), pets)
        for (const [index, { claim }] of batch.entries()) {
          if (claim) {
            await client.query('UPDATE idempotency_keys SET pet_id = $1 WHERE api_key_id = $2 AND idempotency_key = $3', [firstId + index, claim.apiKeyId, claim.key])
          }
        }
        return firstId
      })
    return batch.map((_, index) => ({ id: firstId + index }))
  }
  return new GroupCommit<PetWrite, { id: number }>(insertBatch, batchSize, batchWaitMs)
}

export function petRepository (db: Connection, writes: PetWrites): PetRepository {
  const { query } = db
  const petsById = batchedLookup<number, PetRecord>(async (ids) => {
    const rows = await query<PetDbRow>(`SELECT ${PET_COLUMNS} FROM pets WHERE id = ANY ($1::bigint[])`, [ids], 'pets-by-id')
    return new Map(rows.map((row) => [Number(row.id), toPet(row)]))
  }, MAX_IDS_PER_LOOKUP)
  return {
    insert: async (pet, claim) => writes.submit({ pet, claim }),
    insertMany: async (pets) => {
      await db.transaction(async (client) => {
        for (let start = 0; start < pets.length; start += BULK_ROWS_PER_STATEMENT) {
          await insertPets(onClient(client), pets.slice(start, start + BULK_ROWS_PER_STATEMENT))
        }
      })
    },
    findById: async (id) => await petsById.get(id),
    listPage: async ({ status, afterId, limit }) => {
      const rows = status === undefined
        ? await query<PetDbRow>(PAGE_ALL, [afterId, limit + 1], 'page-all')
        : await query<PetDbRow>(PAGE_BY_STATUS, [afterId, limit + 1, status], 'page-by-status')
      return { pets: rows.slice(0, limit).map(toPet), hasMore: rows.length > limit }
    },
    existsAfter: async (status, afterId) => {
      const [row] = status === undefined
        ? await query<{ found: boolean }>('SELECT EXISTS (SELECT 1 FROM pets WHERE id > $1) AS found', [afterId])
        : await query<{ found: boolean }>('SELECT EXISTS (SELECT 1 FROM pets WHERE status = $2 AND id > $1) AS found', [afterId, status])
      return row?.found === true
    }
  }
}

/**
 * Inserts animals with consecutive ids and returns the first, in one statement. Taking the ids
 * from one counter row serialises id assignment with commit order across every instance (the
 * row stays locked until the transaction ends), so a reader never sees id N+1 committed before
 * id N: keyset pages never skip an animal that commits late. The counter never passes
 * MAX_PET_ID: a batch that would take it beyond inserts nothing and returns no row. Sent alone, the statement is its
 * own transaction: a batch of creates costs one round trip. The columns come as four arrays,
 * so the text never changes and each connection prepares it once.
 */
const INSERT_PETS = `
  WITH taken AS (
    UPDATE counters SET value = value + cardinality($1::text[]) WHERE name = 'pet_ids' AND value + cardinality($1::text[]) <= $5
    RETURNING value - cardinality($1::text[]) AS last_id_before
  ), inserted AS (
    INSERT INTO pets (id, name, category_id, status, created_at)
    SELECT taken.last_id_before + pet.position, pet.name, pet.category_id, pet.status, $4
    FROM taken, unnest($1::text[], $2::bigint[], $3::text[]) WITH ORDINALITY AS pet (name, category_id, status, position)
    RETURNING 1
  )
  SELECT last_id_before + 1 AS first_id, (SELECT count(*) FROM inserted)::int AS inserted FROM taken`

async function insertPets (run: Statement, pets: readonly NewPetRecord[]): Promise<number> {
  const { rows: [row] } = await run({
    name: 'insert-pets',
    text: INSERT_PETS,
    values: [pets.map((pet) => pet.name), pets.map((pet) => pet.categoryId.toString()), pets.map((pet) => pet.status ?? null), Date.now(), MAX_PET_ID]
  })
  // No row: the counter would pass MAX_PET_ID, so it was left as it was and nothing was inserted.
  if (row === undefined) throw new PetIdsExhaustedError()
  const { first_id: firstId, inserted } = row as { first_id?: string, inserted?: number }
  if (firstId === undefined || inserted !== pets.length) throw new Error(`inserting ${pets.length} animals inserted ${String(inserted)}`)
  return Number(firstId)
}
