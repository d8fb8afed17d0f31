import type pg from 'pg'
import { exactInteger } from '../../core/int64.js'
import type { NewPetRecord, PetRecord, PetStatus } from '../../core/pets.js'
import { KEY_INVALIDATIONS_KEPT_MS, MAX_INVALIDATIONS_READ, type SandboxRepository, type SandboxResets } from '../store.js'
import type { Connection } from './connection.js'

const PET_COLUMNS = 'id, name, category_id, status'
const pageSql = (statusFilter: string): string =>
  `SELECT ${PET_COLUMNS} FROM sandbox_pets WHERE account_id = $1 AND ${statusFilter} id > $2 ORDER BY id LIMIT $3`
const PAGE_ALL = pageSql('')
const PAGE_BY_STATUS = pageSql('status = $4 AND')
const MARKER = "SELECT value FROM counters WHERE name = 'sandbox_resets'"

interface PetDbRow { id: string, name: string, category_id: string, status: PetStatus | null }

const toPet = (row: PetDbRow): PetRecord =>
  ({ id: Number(row.id), name: row.name, categoryId: exactInteger(row.category_id), ...(row.status !== null && { status: row.status }) })

/** The seed of an empty sandbox: ids 1 to n, one statement. */
async function insertSeed (client: pg.PoolClient, accountId: number, pets: readonly NewPetRecord[]): Promise<void> {
  await client.query(`INSERT INTO sandbox_pets (account_id, id, name, category_id, status, created_at)
    SELECT $1, pet.position, pet.name, pet.category_id, pet.status, $5
    FROM unnest($2::text[], $3::bigint[], $4::text[]) WITH ORDINALITY AS pet (name, category_id, status, position)`,
  [accountId, pets.map((pet) => pet.name), pets.map((pet) => pet.categoryId.toString()), pets.map((pet) => pet.status ?? null), Date.now()])
  await client.query('UPDATE sandbox_accounts SET last_pet_id = $2, pet_count = $2 WHERE account_id = $1', [accountId, pets.length])
}

/** Creates and seeds the account's sandbox unless it exists; a concurrent creation is waited for. */
async function seed (client: pg.PoolClient, accountId: number, pets: readonly NewPetRecord[]): Promise<boolean> {
  const { rowCount } = await client.query('INSERT INTO sandbox_accounts (account_id, last_pet_id, pet_count) VALUES ($1, 0, 0) ON CONFLICT (account_id) DO NOTHING', [accountId])
  if (rowCount === 0) return false
  await insertSeed(client, accountId, pets)
  return true
}

/** The next id of the account's sandbox, within the bound; the row stays locked until commit, so ids commit in order. */
async function takeId (client: pg.PoolClient, accountId: number, maxPets: number): Promise<number | undefined> {
  const { rows: [row] } = await client.query<{ last_pet_id: string }>(
    'UPDATE sandbox_accounts SET last_pet_id = last_pet_id + 1, pet_count = pet_count + 1 WHERE account_id = $1 AND pet_count < $2 RETURNING last_pet_id', [accountId, maxPets])
  return row === undefined ? undefined : Number(row.last_pet_id)
}

async function reset (client: pg.PoolClient, accountId: number, pets: readonly NewPetRecord[]): Promise<void> {
  const now = Date.now()
  await client.query('INSERT INTO sandbox_accounts (account_id, last_pet_id, pet_count) VALUES ($1, 0, 0) ON CONFLICT (account_id) DO NOTHING', [accountId])
  await client.query('SELECT 1 FROM sandbox_accounts WHERE account_id = $1 FOR UPDATE', [accountId])
  await client.query('DELETE FROM sandbox_pets WHERE account_id = $1', [accountId])
  await client.query("DELETE FROM idempotency_keys WHERE api_key_id IN (SELECT id FROM api_keys WHERE account_id = $1 AND mode = 'test')", [accountId])
  await insertSeed(client, accountId, pets)
  // The counter row stays locked until commit, so reset numbers become visible in their order.
  await client.query(`WITH next AS (UPDATE counters SET value = value + 1 WHERE name = 'sandbox_resets' RETURNING value)
    INSERT INTO sandbox_resets (seq, account_id, created_at) SELECT value, $1, $2 FROM next`, [accountId, now])
  await client.query('DELETE FROM sandbox_resets WHERE created_at < $1', [now - KEY_INVALIDATIONS_KEPT_MS])
}

export function sandboxRepository (db: Connection): SandboxRepository {
  const { query, transaction } = db
  const marker = async (name?: string): Promise<number> => Number((await query<{ value: string }>(MARKER, [], name))[0]?.value)
  return {
    ensureSeeded: async (accountId, pets) => await transaction(async (client) => await seed(client, accountId, pets)),
    insert: async (accountId, pet, claim, { maxPets, seed: demo }) => await transaction(async (client) => {
      let id = await takeId(client, accountId, maxPets)
      if (id === undefined && await seed(client, accountId, demo)) id = await takeId(client, accountId, maxPets)
      if (id === undefined) return 'full' as const
      await client.query('INSERT INTO sandbox_pets (account_id, id, name, category_id, status, created_at) VALUES ($1, $2, $3, $4, $5, $6)',
        [accountId, id, pet.name, pet.categoryId.toString(), pet.status ?? null, Date.now()])
      if (claim !== undefined) await client.query('UPDATE idempotency_keys SET pet_id = $1 WHERE api_key_id = $2 AND idempotency_key = $3', [id, claim.apiKeyId, claim.key])
      return { id }
    }),
    findById: async (accountId, id) => {
      const [row] = await query<PetDbRow>(`SELECT ${PET_COLUMNS} FROM sandbox_pets WHERE account_id = $1 AND id = $2`, [accountId, id], 'sandbox-pet-by-id')
      return row && toPet(row)
    },
    listPage: async (accountId, { status, afterId, limit }) => {
      const rows = status === undefined
        ? await query<PetDbRow>(PAGE_ALL, [accountId, afterId, limit + 1], 'sandbox-page-all')
        : await query<PetDbRow>(PAGE_BY_STATUS, [accountId, afterId, limit + 1, status], 'sandbox-page-by-status')
      return { pets: rows.slice(0, limit).map(toPet), hasMore: rows.length > limit }
    },
    existsAfter: async (accountId, status, afterId) => {
      const [row] = status === undefined
        ? await query<{ found: boolean }>('SELECT EXISTS (SELECT 1 FROM sandbox_pets WHERE account_id = $1 AND id > $2) AS found', [accountId, afterId])
        : await query<{ found: boolean }>('SELECT EXISTS (SELECT 1 FROM sandbox_pets WHERE account_id = $1 AND status = $3 AND id > $2) AS found', [accountId, afterId, status])
      return row?.found === true
    },
    reset: async (accountId, pets) => { await transaction(async (client) => { await reset(client, accountId, pets) }) },
    resetMarker: async () => await marker(),
    resetsSince: async (since): Promise<SandboxResets> => {
      const current = await marker('sandbox-reset-marker')
      if (current === since) return { marker: since, accountIds: [] }
      if (current < since || current - since > MAX_INVALIDATIONS_READ) return { marker: current, accountIds: undefined }
      const rows = await query<{ account_id: string }>('SELECT account_id FROM sandbox_resets WHERE seq > $1 AND seq <= $2 ORDER BY seq', [since, current])
      return { marker: current, accountIds: rows.length === current - since ? rows.map((row) => Number(row.account_id)) : undefined }
    }
  }
}
