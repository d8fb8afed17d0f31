import { SpanKind } from '@opentelemetry/api'
import { ATTR_DB_COLLECTION_NAME, ATTR_DB_OPERATION_NAME, ATTR_DB_QUERY_SUMMARY, ATTR_DB_SYSTEM_NAME } from '@opentelemetry/semantic-conventions'
import type pg from 'pg'
import { activeTracer, childSpan, endWith } from '../../services/tracing.js'
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

/**
 * A statement's operation, its table and its summary (`SELECT pets`), read from its text: what its
 * span is named by. A statement that begins with WITH is named by the writes its parts make
 * (`UPDATE counters INSERT pets`), and its operation is the last of them, the one it exists for.
 */
export function statementSummary (text: string): { operation: string, table: string | undefined, summary: string } {
  const verb = /^\s*([A-Za-z]+)/.exec(text)?.[1]?.toUpperCase() ?? 'QUERY'
  if (verb === 'WITH') {
    const writes = [...text.matchAll(/\b(INSERT\s+INTO|UPDATE|DELETE\s+FROM)\s+([A-Za-z_][A-Za-z0-9_]*)/gi)]
      .map(([, clause = '', table = '']) => ({ operation: (clause.split(/\s/)[0] ?? '').toUpperCase(), table }))
    const last = writes.at(-1)
    if (last !== undefined) return { ...last, summary: writes.map((write) => `${write.operation} ${write.table}`).join(' ') }
  }
  const operation = verb === 'WITH' ? 'SELECT' : verb
  const table = /\b(?:FROM|INTO|UPDATE|JOIN)\s+([A-Za-z_][A-Za-z0-9_]*)/i.exec(text)?.[1]
  return { operation, table, summary: table === undefined ? operation : `${operation} ${table}` }
}

/**
 * The span of one statement, when tracing is on and a request asked for it: its operation and table,
 * never its values. Read from the text once per statement traced, which tracing alone pays for.
 */
function statementSpan (text: string): ReturnType<typeof childSpan> {
  const { operation, table, summary } = statementSummary(text)
  return childSpan(summary, {
    [ATTR_DB_SYSTEM_NAME]: 'postgresql',
    [ATTR_DB_OPERATION_NAME]: operation,
    [ATTR_DB_QUERY_SUMMARY]: summary,
    ...(table !== undefined && { [ATTR_DB_COLLECTION_NAME]: table })
  }, SpanKind.CLIENT)
}

export function connectionTo (pool: PoolLike): Connection {
  const onPool = async <Row extends pg.QueryResultRow>(config: pg.QueryConfig): Promise<pg.QueryResult<Row>> => {
    try {
      const span = activeTracer() !== undefined ? statementSpan(config.text) : undefined
      const result = pool.query<Row>(config)
      if (span !== undefined) endWith(span, result)
      return await result
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
