import { postgresUrls, redactUrl, type Config } from '../config.js'
import { StoreUnavailableError } from '../storage/store.js'

type Where = Pick<Config, 'host' | 'port' | 'storage'>

interface SystemError { code?: unknown, syscall?: unknown, message?: unknown }

const DEFAULT_POSTGRES_PORT = '5432'

/**
 * One line that says what went wrong and which setting changes it, for the failures a user
 * meets at start-up or in a command and can fix themselves; undefined for anything else,
 * which is logged whole instead. Never shows a password: PostgreSQL is named by host and port.
 */
export function explainFailure (error: unknown, where: Where | undefined): string | undefined {
  const { code, syscall } = (typeof error === 'object' && error !== null ? error : {}) as SystemError
  if (where !== undefined && syscall === 'listen') {
    if (code === 'EADDRINUSE') {
      return `port ${where.port} is already in use on ${where.host}: stop the process that holds it, or choose another port with PORT (for example PORT=${where.port === 8080 ? 8081 : 8080} npm start)`
    }
    if (code === 'EACCES') {
      return `this process may not listen on port ${where.port}: choose a port above 1023 with PORT (for example PORT=8080 npm start)`
    }
    if (code === 'EADDRNOTAVAIL') {
      return `HOST=${where.host} is not an address of this machine: set HOST to one of its addresses, or to 0.0.0.0 for all of them`
    }
  }
  if (where?.storage.engine === 'postgres') {
    const server = `PostgreSQL at ${postgresAddress(where.storage.url)}`
    const refused = serverRefusal(error instanceof StoreUnavailableError ? error.reason : error, server, where.storage.url)
    if (refused !== undefined) return refused
    if (error instanceof StoreUnavailableError) {
      return `cannot reach ${server}: ${causeOf(error.reason)}. Is it running, and does DATABASE_URL name it?`
    }
  }
  return undefined
}

/** The server answered and said no: it is running, so the advice is about the database or the credentials. */
function serverRefusal (error: unknown, server: string, url: string): string | undefined {
  const { code } = (typeof error === 'object' && error !== null ? error : {}) as SystemError
  if (code === '3D000') {
    const name = databaseName(url)
    return `${server} is running but has no database ${name === undefined ? 'of that name' : `"${name}"`}: ` +
      `create it (createdb${name === undefined ? '' : ` ${name}`}, as a user allowed to), or name an existing one in DATABASE_URL`
  }
  // 28xxx: the server refused the credentials.
  if (typeof code === 'string' && code.startsWith('28')) return `${server} refused the connection: ${causeOf(error)}; check DATABASE_URL`
  return undefined
}

/** The database a connection string names (the first one, for a list), as pg reads it. */
function databaseName (url: string): string | undefined {
  try {
    const name = decodeURIComponent(new URL(postgresUrls(url)[0] ?? url).pathname.slice(1))
    return name === '' ? undefined : name
  } catch {
    return undefined
  }
}

/** host:port of a connection string, as pg reads it (a host in the query names a socket folder). */
export function postgresAddress (url: string): string {
  let parsed: URL
  try {
    parsed = new URL(url)
  } catch {
    return 'the address in DATABASE_URL'
  }
  const host = decodeURIComponent(parsed.hostname) || parsed.searchParams.get('host') || 'localhost'
  const port = parsed.port || parsed.searchParams.get('port') || DEFAULT_POSTGRES_PORT
  return `${host}:${port}`
}

function causeOf (error: unknown): string {
  const message = error instanceof Error ? error.message : String(error)
  return redactUrl(message.trim() === '' ? String((error as SystemError).code ?? 'unknown error') : message)
}
