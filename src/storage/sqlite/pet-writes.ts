import { closeSync, fdatasync, fdatasyncSync, openSync, realpathSync } from 'node:fs'
import { availableParallelism } from 'node:os'
import { promisify } from 'node:util'
import type Database from 'better-sqlite3'
import type { NewPetRecord } from '../../core/pets.js'
import { GroupCommit } from '../group-commit.js'
import { firstFreePetId, type IdempotencyKeyRef } from '../store.js'
import { SyncBarrier } from '../sync-barrier.js'
import { openDatabase, type SqliteSynchronous } from './database.js'
import { whenWriteLockFree } from './write-lock.js'

interface PetWrite {
  pet: NewPetRecord
  claim: IdempotencyKeyRef | undefined
}

export interface PetWrites {
  insert (pet: NewPetRecord, claim: IdempotencyKeyRef | undefined): Promise<{ id: number }>
  stats (): { commits: number, syncs: number | undefined }
  close (): Promise<void>
}

const fdatasyncOnThreadPool = promisify(fdatasync)

/**
 * On a single core, a batch this large is synced on the event loop: the loop pauses for one
 * sync that answers many creates at once, which costs less than waiting for a pool thread to
 * be scheduled on the core the loop keeps busy.
 */
const SYNC_ON_LOOP_MIN_BATCH = 32

/**
 * Whether large batches are synced on the event loop: only when the process may run on one
 * core alone (one CPU, or pinned to one). With a core to spare, every sync waits for the disk
 * on libuv's thread pool and the loop goes on parsing the next creates: side by side on two
 * cores, 64 clients created about 30 % faster than with large batches synced on the loop,
 * while on one core they created about 5 % slower.
 */
export const syncsLargeBatchesOnLoop = (): boolean => availableParallelism() === 1

// Creates only append: a small page cache holds the pages they touch.
const CREATE_CONNECTION_CACHE_KIB = 1024

/** Rows per INSERT statement: a batch is written with as few statements as these sizes allow. */
const ROWS_PER_INSERT = [64, 16, 4, 1] as const

function prepareInserts (db: Database.Database) {
  return {
    lastId: db.prepare('SELECT max(id) FROM pets').pluck().safeIntegers(),
    insertRows: new Map(ROWS_PER_INSERT.map((rows) => [rows,
      db.prepare(`INSERT INTO pets (id, name, category_id, status, created_at) VALUES ${Array(rows).fill('(?, ?, ?, ?, ?)').join(', ')}`)])),
    completeClaim: db.prepare('UPDATE idempotency_keys SET pet_id = ? WHERE api_key_id = ? AND idempotency_key = ?')
  }
}

/**
 * One transaction for a batch of creates, written with multi-row INSERTs: a row costs about
 * half as much as with a statement of its own. The batch's ids follow the largest id in the
 * table, in the batch's order, counted exactly (firstFreePetId); the transaction holds the write
 * lock, so no other writer can take them. A claimed idempotency key is completed with its animal's id in it.
 */
function petInserter (db: Database.Database): (writes: PetWrite[]) => Array<{ id: number }> {
  let statements: ReturnType<typeof prepareInserts> | undefined
  const insertBatch = db.transaction((writes: PetWrite[]) => {
    // Prepared on first use: the tables exist only after migrate().
    const { lastId, insertRows, completeClaim } = statements ??= prepareInserts(db)
    const now = Date.now()
    const firstId = firstFreePetId(lastId.get() as bigint | null, writes.length)
    let written = 0
    for (const rows of ROWS_PER_INSERT) {
      for (; writes.length - written >= rows; written += rows) {
        const values: unknown[] = []
        for (let index = written; index < written + rows; index++) {
          const pet = (writes[index] as PetWrite).pet
          values.push(firstId + index, pet.name, pet.categoryId, pet.status ?? null, now)
        }
        insertRows.get(rows)?.run(values)
      }
    }
    return writes.map(({ claim }, index) => {
      const id = firstId + index
      if (claim) completeClaim.run(id, claim.apiKeyId, claim.key)
      return { id }
    })
  })
  return (writes) => insertBatch.immediate(writes)
}

/** fdatasync of the write-ahead log: on the event loop, or on libuv's thread pool. */
function walDataSync (walPath: string): { now: () => void, onThreadPool: () => Promise<void>, syncs: () => number, close: () => void } {
  let fd: number | undefined
  let syncs = 0
  // Opened at the first sync, after a commit has created the log.
  const walFd = (): number => (fd ??= openSync(walPath, 'r'))
  return {
    now: () => {
      syncs++
      fdatasyncSync(walFd())
    },
    onThreadPool: async () => {
      syncs++
      await fdatasyncOnThreadPool(walFd())
    },
    syncs: () => syncs,
    close: () => {
      if (fd !== undefined) closeSync(fd)
      fd = undefined
    }
  }
}

/**
 * Creates of animals, group-committed on a connection of their own.
 *
 * Durable (SQLITE_SYNCHRONOUS=full): the connection commits with synchronous=NORMAL, which
 * writes the WAL without syncing it, and a create is answered only once an fdatasync of the
 * WAL that began after its commit has finished: the guarantee of synchronous=FULL (an
 * acknowledged create is on disk). A batch is synced on libuv's thread pool, one sync for the
 * whole batch: the loop keeps answering reads and parsing creates while the disk works, and one
 * sync covers every batch committed before it began. Until then the new animal may already be
 * visible to reads. On a single core, a large batch is synced at once on the event loop instead,
 * as FULL would (see syncsLargeBatchesOnLoop).
 *
 * With a batch size of 1 there is no grouping at all: each create is its own transaction,
 * synced before the next begins. With `off` nothing is synced.
 *
 * Other writes (accounts, keys, sessions …) stay on the store's main connection, which
 * syncs every commit itself (synchronous=FULL).
 */
export interface PetWritesOptions {
  synchronous: SqliteSynchronous
  batchSize: number
  /** Longest a create waits for others to join its batch while the event loop is busy (see GroupCommit); 0 by default. */
  batchWaitMs?: number
  mainDb: Database.Database
}

export function openPetWrites (path: string, { synchronous, batchSize, batchWaitMs, mainDb }: PetWritesOptions): PetWrites {
  const largeBatchesSyncOnLoop = syncsLargeBatchesOnLoop()
  // An in-memory database is private to its connection.
  const ownConnection = path !== ':memory:'
  const db = ownConnection ? openDatabase(path, synchronous === 'full' ? 'NORMAL' : 'OFF') : mainDb
  if (ownConnection) {
    db.pragma(`cache_size = -${CREATE_CONNECTION_CACHE_KIB}`)
    db.pragma('busy_timeout = 0')
  }
  const insert = petInserter(db)
  // SQLite keeps the log beside the file a symbolic link points to.
  const wal = ownConnection && synchronous === 'full' ? walDataSync(`${realpathSync(path)}-wal`) : undefined
  const barrier = wal && new SyncBarrier(wal.onThreadPool)

  /** Each create of the batch with what its answer waits for: nothing, or the batch's sync. */
  const commitAndSync = (batch: PetWrite[]): Array<{ id: number, synced: Promise<void> | undefined }> => {
    const ids = insert(batch)
    let synced: Promise<void> | undefined
    if (wal !== undefined && ((largeBatchesSyncOnLoop && batch.length >= SYNC_ON_LOOP_MIN_BATCH) || batchSize === 1)) wal.now()
    // Asked once for the whole batch: a sync that begins now covers every create in it.
    else synced = barrier?.covering()
    return ids.map(({ id }) => ({ id, synced }))
  }
  const commits = new GroupCommit<PetWrite, { id: number, synced: Promise<void> | undefined }>(
    ownConnection ? async (batch) => await whenWriteLockFree(() => commitAndSync(batch)) : commitAndSync,
    batchSize, batchWaitMs)

  const afterSync = ({ id, synced }: { id: number, synced: Promise<void> | undefined }): { id: number } | Promise<{ id: number }> =>
    synced === undefined ? { id } : synced.then(() => ({ id }))

  return {
    insert: (pet, claim) => commits.submit({ pet, claim }).then(afterSync),
    stats: () => ({ commits: commits.batches, syncs: wal?.syncs() }),
    close: async () => {
      await commits.drain()
      await barrier?.idle()
      wal?.close()
      if (ownConnection) db.close()
    }
  }
}
