import type Database from 'better-sqlite3'
import { exactInteger } from '../../core/int64.js'
import { type NewPetRecord, type PetRecord, type PetStatus } from '../../core/pets.js'
import { KEY_INVALIDATIONS_KEPT_MS, MAX_INVALIDATIONS_READ, type SandboxRepository, type SandboxResets } from '../store.js'
import { preparedOnFirstUse } from './statements.js'

const PET_COLUMNS = 'id, name, category_id, status'

type PetDbRow = [id: bigint, name: string, categoryId: bigint, status: PetStatus | null]

const toPet = ([id, name, categoryId, status]: PetDbRow): PetRecord =>
  ({ id: Number(id), name, categoryId: exactInteger(categoryId), ...(status !== null && { status }) })

const pageSql = (statusFilter: string): string =>
  `SELECT ${PET_COLUMNS} FROM sandbox_pets WHERE account_id = ? AND ${statusFilter} id > ? ORDER BY id LIMIT ?`

const prepare = (db: Database.Database) => ({
  createSandbox: db.prepare('INSERT INTO sandbox_accounts (account_id, last_pet_id, pet_count) VALUES (?, 0, 0) ON CONFLICT (account_id) DO NOTHING'),
  takeId: db.prepare('UPDATE sandbox_accounts SET last_pet_id = last_pet_id + 1, pet_count = pet_count + 1 WHERE account_id = ? AND pet_count < ? RETURNING last_pet_id').pluck(),
  sandboxExists: db.prepare('SELECT 1 FROM sandbox_accounts WHERE account_id = ?').pluck(),
  insertPet: db.prepare('INSERT INTO sandbox_pets (account_id, id, name, category_id, status, created_at) VALUES (?, ?, ?, ?, ?, ?)'),
  completeClaim: db.prepare('UPDATE idempotency_keys SET pet_id = ? WHERE api_key_id = ? AND idempotency_key = ?'),
  petById: db.prepare(`SELECT ${PET_COLUMNS} FROM sandbox_pets WHERE account_id = ? AND id = ?`).raw().safeIntegers(),
  pageAll: db.prepare(pageSql('')).raw().safeIntegers(),
  pageByStatus: db.prepare(pageSql('status = ? AND')).raw().safeIntegers(),
  existsAfterAll: db.prepare('SELECT EXISTS (SELECT 1 FROM sandbox_pets WHERE account_id = ? AND id > ?)').pluck(),
  existsAfterByStatus: db.prepare('SELECT EXISTS (SELECT 1 FROM sandbox_pets WHERE account_id = ? AND status = ? AND id > ?)').pluck(),
  deletePets: db.prepare('DELETE FROM sandbox_pets WHERE account_id = ?'),
  emptySandbox: db.prepare('UPDATE sandbox_accounts SET last_pet_id = 0, pet_count = 0 WHERE account_id = ?'),
  forgetClaims: db.prepare("DELETE FROM idempotency_keys WHERE api_key_id IN (SELECT id FROM api_keys WHERE account_id = ? AND mode = 'test')"),
  bumpResets: db.prepare("UPDATE counters SET value = value + 1 WHERE name = 'sandbox_resets' RETURNING value").pluck(),
  insertReset: db.prepare('INSERT INTO sandbox_resets (seq, account_id, created_at) VALUES (?, ?, ?)'),
  purgeResets: db.prepare('DELETE FROM sandbox_resets WHERE created_at < ?'),
  resetAccounts: db.prepare('SELECT account_id FROM sandbox_resets WHERE seq > ? AND seq <= ? ORDER BY seq').pluck(),
  resetMarker: db.prepare("SELECT value FROM counters WHERE name = 'sandbox_resets'").pluck()
})

type Statements = ReturnType<typeof prepare>

/** Inserts the animals with the account's next ids, within the bound; their ids. */
function insertPets (sql: Statements, accountId: number, pets: readonly NewPetRecord[], maxPets: number, now: number): number[] {
  const ids: number[] = []
  for (const pet of pets) {
    const id = sql.takeId.get(accountId, maxPets) as number | undefined
    if (id === undefined) break
    sql.insertPet.run(accountId, id, pet.name, pet.categoryId, pet.status ?? null, now)
    ids.push(id)
  }
  return ids
}

/** The sandbox tables, written on the main connection (synchronous=FULL) under the write lock. */
export function sandboxRepository (db: Database.Database): SandboxRepository {
  const sql = preparedOnFirstUse(db, prepare)
  const seed = (accountId: number, pets: readonly NewPetRecord[]): boolean => {
    if (sql().createSandbox.run(accountId).changes === 0) return false
    insertPets(sql(), accountId, pets, Number.MAX_SAFE_INTEGER, Date.now())
    return true
  }
  const marker = (): number => sql().resetMarker.get() as number
  return {
    ensureSeeded: async (accountId, pets) => db.transaction(() => seed(accountId, pets)).immediate(),
    insert: async (accountId, pet, claim, { maxPets, seed: demo }) => db.transaction((): { id: number } | 'full' => {
      if (sql().sandboxExists.get(accountId) === undefined) seed(accountId, demo)
      const [id] = insertPets(sql(), accountId, [pet], maxPets, Date.now())
      if (id === undefined) return 'full'
      if (claim !== undefined) sql().completeClaim.run(id, claim.apiKeyId, claim.key)
      return { id }
    }).immediate(),
    findById: async (accountId, id) => {
      const row = sql().petById.get(accountId, id) as PetDbRow | undefined
      return row && toPet(row)
    },
    listPage: async (accountId, { status, afterId, limit }) => {
      const rows = (status === undefined ? sql().pageAll.all(accountId, afterId, limit + 1) : sql().pageByStatus.all(accountId, status, afterId, limit + 1)) as PetDbRow[]
      return { pets: rows.slice(0, limit).map(toPet), hasMore: rows.length > limit }
    },
    existsAfter: async (accountId, status, afterId) =>
      (status === undefined ? sql().existsAfterAll.get(accountId, afterId) : sql().existsAfterByStatus.get(accountId, status, afterId)) === 1,
    reset: async (accountId, pets) => {
      db.transaction(() => {
        const now = Date.now()
        sql().createSandbox.run(accountId)
        sql().deletePets.run(accountId)
        sql().emptySandbox.run(accountId)
        sql().forgetClaims.run(accountId)
        insertPets(sql(), accountId, pets, Number.MAX_SAFE_INTEGER, now)
        sql().insertReset.run(sql().bumpResets.get() as number, accountId, now)
        sql().purgeResets.run(now - KEY_INVALIDATIONS_KEPT_MS)
      }).immediate()
    },
    resetMarker: async () => marker(),
    resetsSince: async (since): Promise<SandboxResets> => {
      const current = marker()
      if (current === since) return { marker: since, accountIds: [] }
      if (current < since || current - since > MAX_INVALIDATIONS_READ) return { marker: current, accountIds: undefined }
      const accountIds = sql().resetAccounts.all(since, current) as number[]
      return { marker: current, accountIds: accountIds.length === current - since ? accountIds : undefined }
    }
  }
}
