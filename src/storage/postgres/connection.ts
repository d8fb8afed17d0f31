import type pg from 'pg'
import { StoreUnavailableError } from '../store.js'
import type { PoolLike } from './hosts.js'

/** Connection failures, timeouts and a host that turned read-only (a demoted primary) mean "try again later", not "bug". */
function isUnavailable (error: unknown): boolean {
  const { code, message } = error as { code?: string, message?: string }
  if (typeof code === 'string' && (/^(08|57P0|53|25006)/.test(code) || ['ECONNREFUSED', 'ECONNRESET', 'ETIMEDOUT', 'ENOTFOUND', 'EPIPE', 'EHOSTUNREACH'].includes(code))) return true
  return typeof message === 'string' && /timeout|Connection terminated|connection .*closed|Client has encountered a connection error/i.test(message)
}

const unavailableOr = (error: unknown): unknown => (isUnavailable(error) ? new StoreUnavailableError(error) : error)

/** A statement sent on a pooled connection or on a transaction's client; `name` prepares it once on each connection. */
export type Statement = (config: { name: string, text: string, values: unknown[] }) => Promise<pg.QueryResult>

/** How every repository reaches one pool; an unreachable server surfaces as StoreUnavailableError. */
export interface Connection {
  readonly pool: PoolLike
  /** A statement on a pooled connection. */
  onPool: <Row extends pg.QueryResultRow>(config: pg.QueryConfig) => Promise<pg.QueryResult<Row>>
  /** A statement's rows; `name` prepares it once on each connection. */
  query: <Row extends pg.QueryResultRow>(text: string, values?: unknown[], name?: string) => Promise<Row[]>
  /** `work` between BEGIN and COMMIT on one client, rolled back when it throws. */
  transaction: <T>(work: (client: pg.PoolClient) => Promise<T>) => Promise<T>
}

export type Transaction = Connection['transaction']

export const onClient = (client: pg.PoolClient): Statement => async (config) => await client.query(config)

export function connectionTo (pool: PoolLike): Connection {
  const onPool = async <Row extends pg.QueryResultRow>(config: pg.QueryConfig): Promise<pg.QueryResult<Row>> => {
    try {
      return await pool.query<Row>(config)
    } catch (error) {
      throw unavailableOr(error)
    }
  }
  return {
    pool,
    onPool,
    query: async <Row extends pg.QueryResultRow>(text: string, values: unknown[] = [], name?: string): Promise<Row[]> =>
      (await onPool<Row>({ text, values, name })).rows,
    transaction: async (work) => await inTransaction(pool, work)
  }
}

async function inTransaction<T> (pool: PoolLike, work: (client: pg.PoolClient) => Promise<T>): Promise<T> {
  let client: pg.PoolClient
  try {
    client = await pool.connect()
  } catch (error) {
    throw unavailableOr(error)
  }
  let broken = false
  try {
    await client.query('BEGIN')
    const result = await work(client)
    await client.query('COMMIT')
    return result
  } catch (error) {
    await client.query('ROLLBACK').catch(() => { broken = true })
    throw unavailableOr(error)
  } finally {
    client.release(broken)
  }
}
