import { isIP } from 'node:net'
import { ConfigSchema, VARIABLES, type Config, type ConfigKey, type StorageLocation, type VariableSchema } from './config-schema.js'

export { ConfigSchema, DEFAULT_SQLITE_PATH, LOG_LEVELS, VARIABLES, type Config, type ConfigKey, type LogLevel, type StorageLocation } from './config-schema.js'

const MAX_BASE_URL_LENGTH = 2048
const MASK = '****'

export class ConfigError extends Error {
  constructor (readonly problems: string[]) {
    super(`invalid configuration:\n${problems.map((problem) => `  - ${problem}`).join('\n')}`)
  }
}

type Env = Record<string, string | undefined>

/** A refused value: what the variable accepts, and the value as the message may show it. */
class Invalid {
  constructor (readonly accepts: string, readonly shown?: string) {}
}

/** Reads a set, non-empty value; undefined leaves the variable at its default. */
type Reader = (value: string, read: Partial<Config>) => unknown

/** The variables whose values a type and bounds alone do not check; the others are read from their schema. */
const READERS: Partial<Record<ConfigKey, Reader>> = {
  host: readHost,
  port: readPort,
  storage: readStorage,
  databaseReplicaUrls: readReplicaUrls,
  publicBaseUrl: readBaseUrl,
  stagingBaseUrl: readBaseUrl,
  redisUrl: readRedisUrl,
  smtpUrl: readSmtpUrl,
  mailFrom: readMailFrom,
  corsOrigins: readOrigins,
  metricsToken: readToken,
  trustProxy: readTrustProxy,
  otelEndpoint: readCollectorUrl,
  otelTracesEndpoint: readCollectorUrl,
  otelServiceName: (value) => value,
  otelTracesSamplerArg: readRatio
}

/** Reads the environment into a frozen Config; throws ConfigError naming every bad variable. */
export function loadConfig (env: Env): Readonly<Config> {
  const problems: string[] = []
  const read: Partial<Record<ConfigKey, unknown>> = {}
  for (const [key, schema] of VARIABLES) {
    const value = env[schema.env]
    const result = value === undefined || value === '' ? undefined : (READERS[key] ?? readBySchema(schema))(value, read as Partial<Config>)
    if (result instanceof Invalid) {
      problems.push(`${schema.env}=${JSON.stringify(result.shown ?? shownValue(schema, value ?? ''))} is invalid: ${result.accepts}`)
    } else {
      read[key] = result ?? structuredClone(schema.default)
    }
  }
  if (problems.length > 0) throw new ConfigError(problems)
  const config = read as Config
  // WRITE_BATCH_WAIT_MS has no default of its own in the schema: it follows the engine DATABASE_URL names.
  return Object.freeze({ ...config, writeBatchWaitMs: config.writeBatchWaitMs ?? defaultWriteBatchWaitMs(config.storage.engine) })
}

/** A value as messages and `animal-store config` may show it: secrets masked, as the schema says. */
function shownValue (schema: VariableSchema, value: string): string {
  if (value === '' || schema.secret === undefined) return value
  return schema.secret === 'whole' ? MASK : redactUrl(value)
}

/** Each variable's name and effective value as an environment would give it, secrets masked. */
export function describeConfig (config: Readonly<Config>): Array<[string, string]> {
  return VARIABLES.map(([key, schema]) => [schema.env, shownValue(schema, envValue(config[key]))])
}

/** A Config value written back as its variable's value. */
export function envValue (value: unknown): string {
  if (value === undefined) return ''
  if (Array.isArray(value)) return value.join(',')
  if (typeof value === 'object' && value !== null && 'engine' in value) {
    const storage = value as StorageLocation
    return storage.engine === 'sqlite' ? `sqlite:${storage.path}` : storage.url
  }
  return String(value as string | number | boolean)
}

/** What a variable of a plain type accepts, as its error message and the guide's table say it. */
export function acceptedValues (schema: VariableSchema, style: 'message' | 'table'): string {
  const quote = (value: string): string => style === 'table' ? `\`${value}\`` : value
  if (schema.type === 'integer') return style === 'table' ? `integer ${schema.minimum}–${schema.maximum}` : `expected an integer from ${schema.minimum} to ${schema.maximum}`
  const values = schema.type === 'boolean' ? ['true', 'false'] : [...(schema.enum ?? [])]
  const choices = values.length === 2 ? `${quote(values[0] ?? '')} or ${quote(values[1] ?? '')}` : values.map(quote).join(style === 'table' ? ' ' : ', ')
  return style === 'table' ? choices : `expected ${values.length === 2 ? '' : 'one of '}${choices}`
}

function readBySchema (schema: VariableSchema): Reader {
  const accepts = acceptedValues(schema, 'message')
  if (schema.type === 'integer') {
    const min = schema.minimum ?? 0
    const max = schema.maximum ?? Number.MAX_SAFE_INTEGER
    return (value) => /^[0-9]{1,9}$/.test(value) && Number(value) >= min && Number(value) <= max ? Number(value) : new Invalid(accepts)
  }
  if (schema.type === 'boolean') {
    return (value) => value === 'true' || value === '1' ? true : value === 'false' || value === '0' ? false : new Invalid(accepts)
  }
  return (value) => schema.enum?.includes(value) === true ? value : new Invalid(accepts)
}

function readHost (value: string): string | Invalid {
  return /^[0-9A-Za-z.:[\]-]+$/.test(value) ? value : new Invalid('expected a host name or IP address')
}

/** A port has at most five digits, where the other integers may carry leading zeros up to nine. */
function readPort (value: string): number | Invalid {
  const port = ConfigSchema.properties.port as unknown as VariableSchema
  return /^[0-9]{1,5}$/.test(value) && Number(value) <= (port.maximum ?? 0) ? Number(value) : new Invalid(acceptedValues(port, 'message'))
}

function readStorage (value: string): StorageLocation | Invalid {
  if (value.startsWith('sqlite:')) {
    const path = value.slice('sqlite:'.length).replace(/^\/\/(?=\/)/, '')
    return path === '' ? new Invalid('sqlite: needs a file path, as in sqlite:./data/animal-store.sqlite') : { engine: 'sqlite', path }
  }
  if (/^postgres(ql)?:\/\/./.test(value)) {
    const problem = postgresUrlsProblem(value)
    return problem === undefined ? { engine: 'postgres', url: value } : new Invalid(problem)
  }
  // A value without a scheme is most often the path of a SQLite file.
  const hint = /^[a-z][a-z0-9+.-]*:/i.test(value) ? '' : `; for a SQLite file at that path write DATABASE_URL=sqlite:${value}`
  return new Invalid(`expected sqlite:<path>, postgres://… or postgresql://… (several PostgreSQL hosts: their URLs separated by commas)${hint}`)
}

/**
 * The PostgreSQL URLs of a comma-separated list, one per host. A comma splits the list only where
 * the next URL begins, so a comma inside one URL (in a password, say) stays where it is.
 */
export function postgresUrls (value: string): string[] {
  return value.split(/,\s*(?=postgres(?:ql)?:\/\/)/).map((url) => url.trim())
}

function postgresUrlsProblem (value: string): string | undefined {
  for (const url of postgresUrls(value)) {
    if (!/^postgres(ql)?:\/\/./.test(url)) return 'expected PostgreSQL URLs (postgres://… or postgresql://…) separated by commas'
    // A comma splits the list only before the next URL, so a stray one would end up in the database name.
    if (url.endsWith(',')) return 'a comma with no URL after it: remove it, or write the next URL after it (postgres://h1/db,postgres://h2/db)'
    if (!URL.canParse(url)) return `${JSON.stringify(redactUrl(url))} is not a valid URL: check the host, the port and the characters to percent-encode`
    // libpq's postgres://h1,h2/db names several hosts in one URL; the pg driver would take "h1,h2" for one host name.
    const authority = /^postgres(?:ql)?:\/\/([^/?#]*)/.exec(url)?.[1] ?? ''
    if (authority.slice(authority.lastIndexOf('@') + 1).includes(',')) return 'expected one host per URL: write postgres://h1/db,postgres://h2/db rather than postgres://h1,h2/db'
  }
  return undefined
}

function readReplicaUrls (value: string, read: Partial<Config>): string[] | Invalid | undefined {
  if (value.trim() === '') return undefined
  if (read.storage?.engine !== 'postgres') return new Invalid('replicas need DATABASE_URL to name PostgreSQL')
  const problem = postgresUrlsProblem(value.trim())
  return problem === undefined ? postgresUrls(value.trim()) : new Invalid(problem)
}

function readBaseUrl (value: string): string | Invalid {
  let url: URL
  try {
    url = new URL(value)
  } catch {
    return new Invalid('expected an absolute http(s) URL such as https://api.example.com/v1')
  }
  if (url.protocol !== 'http:' && url.protocol !== 'https:') return new Invalid('expected an http or https URL')
  if (url.search !== '' || url.hash !== '') return new Invalid('expected a URL without query or fragment')
  // Link headers carry it; the OpenAPI document states how long they can be.
  if (value.length > MAX_BASE_URL_LENGTH) return new Invalid(`expected a URL of at most ${MAX_BASE_URL_LENGTH} characters`, `${value.slice(0, 40)}…`)
  return value.replace(/\/+$/, '')
}

/**
 * SQLite commits on the event loop, so on a busy server a create waits up to 5 ms for others to
 * share its commit and sync. A PostgreSQL commit runs in the database while the next batch
 * gathers anyway: there, waiting only merged the two batches and left the loop idle.
 */
const defaultWriteBatchWaitMs = (engine: StorageLocation['engine']): number => engine === 'sqlite' ? 5 : 0

function readCollectorUrl (value: string): string | Invalid {
  return URL.canParse(value) && /^https?:\/\//i.test(value) ? value : new Invalid('expected an absolute http(s) URL such as http://localhost:4318')
}

function readRatio (value: string): number | Invalid {
  return /^(?:0(?:\.[0-9]*)?|1(?:\.0*)?|\.[0-9]+)$/.test(value) ? Number(value) : new Invalid('expected a number from 0 to 1, such as 0.1')
}

function readToken (value: string): string | Invalid {
  return /^[\x21-\x7e]{16,}$/.test(value) ? value : new Invalid('expected at least 16 visible ASCII characters')
}

function readRedisUrl (value: string): string | Invalid {
  return /^rediss?:\/\/./.test(value) ? value : new Invalid('expected redis://host:port or rediss://…')
}

function readSmtpUrl (value: string): string | Invalid {
  return /^smtps?:\/\/./.test(value) ? value : new Invalid('expected smtp://user:password@host:port or smtps://…')
}

/** An address, optionally with a name (`Animal Store <no-reply@example.com>`): one line of visible text. */
function readMailFrom (value: string): string | Invalid {
  const visible = [...value].every((character) => (character.codePointAt(0) ?? 0) >= 0x20 && character !== '\u007F')
  return value.length <= 320 && visible && /^[^@]*?[^\s@<>]+@[^\s@<>]+\.[^\s@<>]+>?$/.test(value) ? value : new Invalid('expected an address such as no-reply@example.com or Animal Store <no-reply@example.com>')
}

function readOrigins (value: string): string[] | Invalid | undefined {
  if (value.trim() === '') return undefined
  const origins = value.split(',').map((origin) => origin.trim()).filter((origin) => origin !== '')
  const valid = origins.every((origin) => {
    try {
      return new URL(origin).origin === origin
    } catch {
      return false
    }
  })
  return valid ? origins : new Invalid('expected a comma-separated list of origins such as https://app.example.com')
}

/** proxy-addr's names for the private ranges, accepted as Fastify's trustProxy accepts them. */
const PROXY_RANGE_NAMES = ['loopback', 'linklocal', 'uniquelocal']

function readTrustProxy (value: string): string[] | Invalid | undefined {
  if (value.trim() === '') return undefined
  const entries = value.split(',').map((entry) => entry.trim()).filter((entry) => entry !== '')
  const valid = entries.every((entry) => {
    if (PROXY_RANGE_NAMES.includes(entry)) return true
    const [address = '', prefix, extra] = entry.split('/')
    const version = isIP(address)
    if (version === 0 || extra !== undefined) return false
    return prefix === undefined || (/^[0-9]{1,3}$/.test(prefix) && Number(prefix) <= (version === 4 ? 32 : 128))
  })
  return valid ? entries : new Invalid('expected a comma-separated list of proxy addresses or CIDR ranges such as 10.0.0.0/8,127.0.0.1 (or loopback, linklocal, uniquelocal)')
}

/** Hides the passwords in a connection string, or a comma-separated list of them, before it is shown anywhere. */
export function redactUrl (value: string): string {
  return value.replace(/(\/\/[^:/@,]*:)[^@/]*@/g, '$1****@').replace(/([?&]password=)[^&,]*/gi, '$1****')
}
