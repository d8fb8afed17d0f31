/**
 * Benchmark data, made the way an operator makes it: `animal-store migrate`, `seed`,
 * `accounts create` and `keys create`, run as processes against the database.
 */
import { execFile } from 'node:child_process'
import { join } from 'node:path'
import { promisify } from 'node:util'
import pg from 'pg'
import { root, syncToDisk } from './support.js'

const run = promisify(execFile)
const CLI = join(root, 'dist', 'cli', 'main.js')
const POSTGRES_ADMIN_URL = process.env.BENCH_POSTGRES_URL ?? 'postgres://postgres@127.0.0.1:5432/test'

async function cli (databaseUrl: string, ...args: string[]): Promise<string> {
  const { stdout } = await run('node', [CLI, ...args], { env: { ...process.env, DATABASE_URL: databaseUrl, LOG_LEVEL: 'warn' }, maxBuffer: 16 * 1024 * 1024 })
  return stdout
}

/** Seeds `count` animals and returns a fresh API key of the account bench@example.com. */
async function seed (databaseUrl: string, count: number): Promise<string> {
  await cli(databaseUrl, 'migrate')
  const started = Date.now()
  await cli(databaseUrl, 'seed', '--count', String(count))
  console.log(`  ${count} animals seeded into ${databaseUrl.replace(/\/\/[^@]*@/, '//')} in ${((Date.now() - started) / 1000).toFixed(1)} s`)
  await cli(databaseUrl, 'accounts', 'create', '--email', 'bench@example.com')
  const key = /ask_[A-Za-z0-9]+/.exec(await cli(databaseUrl, 'keys', 'create', '--email', 'bench@example.com'))?.[0]
  if (key === undefined) throw new Error('keys create printed no key')
  return key
}

export async function seededSqlite (path: string, count: number): Promise<{ path: string, key: string }> {
  const key = await seed(`sqlite:${path}`, count)
  syncToDisk(path)
  return { path, key }
}

async function admin<T> (work: (client: pg.Client) => Promise<T>): Promise<T> {
  const client = new pg.Client({ connectionString: POSTGRES_ADMIN_URL, connectionTimeoutMillis: 3000 })
  await client.connect()
  try {
    return await work(client)
  } finally {
    await client.end().catch(() => {})
  }
}

function databaseUrl (name: string): string {
  const url = new URL(POSTGRES_ADMIN_URL)
  url.pathname = `/${name}`
  return url.toString()
}

/** A freshly seeded database on the local PostgreSQL, or undefined (with a note) when none answers. */
export async function seededPostgres (name: string, count: number): Promise<{ url: string, key: string } | undefined> {
  try {
    await admin(async (client) => {
      await client.query(`DROP DATABASE IF EXISTS ${name}`)
      await client.query(`CREATE DATABASE ${name}`)
    })
  } catch (error) {
    console.log(`PostgreSQL not measured: ${(error as Error).message}`)
    return undefined
  }
  const url = databaseUrl(name)
  const key = await seed(url, count)
  await admin(async (client) => { await client.query('CHECKPOINT') })
  return { url, key }
}

/** A copy of a seeded database (same rows, same keys), made by PostgreSQL from it as a template. */
export async function copyPostgresDatabase (template: string, name: string): Promise<{ name: string, url: string }> {
  await admin(async (client) => {
    await client.query(`DROP DATABASE IF EXISTS ${name}`)
    await client.query(`CREATE DATABASE ${name} TEMPLATE ${template}`)
    // Written out now rather than by the next timed checkpoint, in the middle of some contender's run.
    await client.query('CHECKPOINT')
  })
  return { name, url: databaseUrl(name) }
}

export async function dropPostgresDatabase (name: string): Promise<void> {
  await admin(async (client) => { await client.query(`DROP DATABASE IF EXISTS ${name} WITH (FORCE)`) })
}
