import { execFile, execFileSync } from 'node:child_process'
import { chownSync, existsSync, mkdtempSync, readdirSync, readFileSync, appendFileSync, rmSync, statfsSync } from 'node:fs'
import { createServer } from 'node:net'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import type { TestContext } from 'node:test'
import { promisify } from 'node:util'
import pg from 'pg'
import { eventually } from './eventually.js'

const run = promisify(execFile)

/** The server binaries the throwaway clusters need, in the folder `pg_config --bindir` names. */
const BINARIES = ['initdb', 'pg_ctl', 'pg_basebackup', 'postgres']

let binDir: string | undefined | null = null

/**
 * The folder of PostgreSQL's server binaries, or undefined when they are missing (the caller
 * skips). Under CI=true a missing binary is a failure, not a reason to skip: this throws.
 */
export function postgresServerBinaries (): string | undefined {
  if (binDir !== null) return binDir
  let problem: string | undefined
  try {
    const dir = execFileSync('pg_config', ['--bindir'], { encoding: 'utf8' }).trim()
    const missing = BINARIES.filter((name) => !existsSync(join(dir, name)))
    if (missing.length === 0) {
      binDir = dir
      return dir
    }
    problem = `${missing.join(', ')} missing from ${dir}`
  } catch (error) {
    problem = `pg_config --bindir failed: ${(error as Error).message}`
  }
  if (process.env.CI === 'true') {
    throw new Error(`PostgreSQL's server binaries are required in CI (${problem}): apt-get install postgresql-15`)
  }
  process.stderr.write(`\n*** PostgreSQL server binaries not found (${problem}): replication suites are SKIPPED ***\n\n`)
  binDir = undefined
  return undefined
}

/** The postgres account the binaries run as when the tests run as root (initdb and postgres refuse root). */
const asServerUser = (command: string[]): string[] => (process.getuid?.() === 0 ? ['runuser', '-u', 'postgres', '--', ...command] : command)

async function runAsServerUser (command: string[]): Promise<void> {
  const [file = '', ...args] = asServerUser(command)
  await run(file, args, { timeout: 60_000 })
}

/** A new temporary folder that the account the binaries run as owns, so that they can write in it. */
function serverUserTempDir (prefix: string): string {
  const dir = mkdtempSync(prefix)
  if (process.getuid?.() === 0) {
    const postgresUid = Number(execFileSync('id', ['-u', 'postgres'], { encoding: 'utf8' }).trim())
    const postgresGid = Number(execFileSync('id', ['-g', 'postgres'], { encoding: 'utf8' }).trim())
    chownSync(dir, postgresUid, postgresGid)
  }
  return dir
}

/** Memory-backed on Linux; containers often give it 64 MB, too little for a pair, hence the check for room. */
const SHM = '/dev/shm'

/**
 * The folder the tests' clusters go in: /dev/shm when it has room, else the OS temp dir. Every
 * file a cluster writes (its copy, the base backup, WAL) costs several times more on disk. The
 * tests kill PostgreSQL's processes, never the machine, and what a killed server wrote is in the
 * page cache on disk too, so what they check is the same in memory.
 */
export function clustersFolder (): string {
  try {
    const { bavail, bsize } = statfsSync(SHM)
    if (bavail * bsize >= 2 * 1024 ** 3) return SHM
  } catch {
    // No /dev/shm.
  }
  return tmpdir()
}

/** The template of each folder the clusters go in. */
const templates = new Map<string, Promise<string>>()

/**
 * The data folder of a cluster that initdb made in `folder` and nothing ever started: each primary
 * is a copy of it, which costs a fraction of an initdb. The first pair of the process (of the test
 * file) makes it; it is removed when the process exits.
 */
async function clusterTemplate (bin: string, folder: string): Promise<string> {
  let template = templates.get(folder)
  if (template === undefined) {
    const dir = serverUserTempDir(join(folder, 'animal-store-pg-template-'))
    process.once('exit', () => { rmSync(dir, { recursive: true, force: true }) })
    const data = join(dir, 'data')
    template = runAsServerUser([join(bin, 'initdb'), '-D', data, '-U', 'postgres', '-A', 'trust', '-E', 'UTF8', '--no-sync', '--no-instructions']).then(() => data)
    templates.set(folder, template)
  }
  return await template
}

async function freePort (): Promise<number> {
  const server = createServer()
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve))
  const address = server.address()
  await new Promise((resolve) => server.close(resolve))
  if (address === null || typeof address === 'string') throw new Error('no TCP address')
  return address.port
}

/** Every process whose parent is `pid` (Linux /proc). */
function childrenOf (pid: number): number[] {
  const children: number[] = []
  for (const entry of readdirSync('/proc')) {
    if (!/^\d+$/.test(entry)) continue
    try {
      // The command name in field 2 may hold spaces and parentheses: the fields after the last ')' are fixed.
      const stat = readFileSync(`/proc/${entry}/stat`, 'utf8')
      const parent = Number(stat.slice(stat.lastIndexOf(')') + 2).split(' ')[1])
      if (parent === pid) children.push(Number(entry))
    } catch {
      // The process ended while being looked at.
    }
  }
  return children
}

export class PgServer {
  /** The database every test uses; the cluster is the test's own. */
  readonly database = 'postgres'

  constructor (private readonly bin: string, readonly dir: string, readonly port: number) {}

  get url (): string {
    return `postgres://postgres@127.0.0.1:${this.port}/${this.database}`
  }

  private pg (name: string, args: string[]): Promise<{ stdout: string, stderr: string }> {
    const [file = '', ...rest] = asServerUser([join(this.bin, name), ...args])
    return run(file, rest, { timeout: 60_000 })
  }

  async start (): Promise<void> {
    await this.pg('pg_ctl', ['-D', this.dir, '-l', join(this.dir, 'server.log'), '-w', '-t', '60', 'start'])
  }

  async stop (mode: 'fast' | 'immediate' = 'fast'): Promise<void> {
    await this.pg('pg_ctl', ['-D', this.dir, '-m', mode, '-w', '-t', '60', 'stop'])
  }

  async promote (): Promise<void> {
    await this.pg('pg_ctl', ['-D', this.dir, '-w', '-t', '60', 'promote'])
  }

  /** The postmaster's pid while it runs. */
  pid (): number | undefined {
    try {
      const pid = Number(readFileSync(join(this.dir, 'postmaster.pid'), 'utf8').split('\n')[0])
      process.kill(pid, 0)
      return pid
    } catch {
      return undefined
    }
  }

  /**
   * The machine dies: SIGKILL the postmaster and every one of its processes at once, so nothing
   * is flushed, sent to a standby or cleaned up, and the postmaster cannot restart its children.
   */
  kill (): void {
    const pid = this.pid()
    if (pid === undefined) return
    const children = childrenOf(pid)
    process.kill(pid, 'SIGKILL')
    for (const child of children) {
      try {
        process.kill(child, 'SIGKILL')
      } catch {
        // Already gone.
      }
    }
  }

  async query<Row extends pg.QueryResultRow = Record<string, unknown>> (text: string, values: unknown[] = []): Promise<Row[]> {
    const client = new pg.Client({ connectionString: this.url, connectionTimeoutMillis: 10_000 })
    await client.connect()
    try {
      return (await client.query<Row>(text, values)).rows
    } finally {
      await client.end()
    }
  }

  /** Polls a condition on this server until it holds (the server offers no event for it), for at most `ms`. */
  async waitFor (what: string, condition: () => Promise<boolean>, ms = 30_000): Promise<void> {
    await eventually(async () => {
      if (!await condition().catch(() => false)) throw new Error(`timed out waiting for ${what} on port ${this.port}; log:\n${this.log()}`)
    }, { timeout: ms })
  }

  log (): string {
    try {
      return readFileSync(join(this.dir, 'server.log'), 'utf8').split('\n').slice(-30).join('\n')
    } catch {
      return '(no log)'
    }
  }

  configure (settings: Record<string, string | number>): void {
    appendFileSync(join(this.dir, 'postgresql.conf'), Object.entries(settings).map(([name, value]) => `${name} = ${typeof value === 'number' ? value : `'${value}'`}\n`).join(''))
  }
}

export interface ReplicatedPair {
  primary: PgServer
  standby: PgServer
}

export interface PairOptions {
  /** Commits wait for the standby to flush them (synchronous_standby_names names it, synchronous_commit=on). */
  synchronous?: boolean
  /** The standby applies each commit this long after the primary made it (recovery_min_apply_delay): a replica that lags. */
  applyDelayMs?: number
  /** shared_buffers of both servers (16MB: tests keep little data). */
  sharedBuffers?: string
  /** The folder the servers' folders go in (the OS temp dir). */
  folder?: string
}

/**
 * A throwaway primary and hot standby on free loopback ports, the primary a copy of a cluster
 * initdb made and the standby made by pg_basebackup -R -X stream, in a temporary folder
 * (clustersFolder), stopped and removed after the test whatever happens. Undefined when the
 * binaries are missing (outside CI).
 */
export async function startReplicatedPair (t: TestContext, options: PairOptions = {}): Promise<ReplicatedPair | undefined> {
  const bin = postgresServerBinaries()
  if (bin === undefined) return undefined
  const pair = await buildReplicatedPair(bin, { folder: clustersFolder(), ...options }, (destroy) => { t.after(destroy) })
  return pair
}

/**
 * The same for a script: `onCleanup` receives the function that stops both servers and removes
 * their folder, as soon as there is something to remove (before anything can fail).
 */
export async function buildReplicatedPair (bin: string, options: PairOptions, onCleanup: (destroy: () => Promise<void>) => void): Promise<ReplicatedPair> {
  const folder = options.folder ?? tmpdir()
  const root = serverUserTempDir(join(folder, 'animal-store-pg-'))
  const servers: PgServer[] = []
  onCleanup(async () => {
    for (const server of servers) {
      if (server.pid() !== undefined) await server.stop('immediate').catch(() => { server.kill() })
    }
    rmSync(root, { recursive: true, force: true })
  })

  const primary = new PgServer(bin, join(root, 'primary'), await freePort())
  servers.push(primary)
  // The copy keeps what pg_basebackup needs of the primary, as initdb wrote it: pg_hba.conf lets 127.0.0.1 connect for
  // replication, and wal_level (replica) and max_wal_senders (10) are the defaults. Blocks of zeros, most of the WAL
  // segment initdb made, stay holes in the copy: PostgreSQL reads them as the zeros they are.
  await runAsServerUser(['cp', '-a', '--sparse=always', await clusterTemplate(bin, folder), primary.dir])
  primary.configure({
    port: primary.port,
    listen_addresses: '127.0.0.1',
    unix_socket_directories: root,
    shared_buffers: options.sharedBuffers ?? '16MB',
    max_connections: 200,
    synchronous_commit: 'on'
  })
  await primary.start()

  const standby = new PgServer(bin, join(root, 'standby'), await freePort())
  servers.push(standby)
  // The standby is a copy of the running primary, not of the template: it must start from the primary's own checkpoint.
  await runAsServerUser([join(bin, 'pg_basebackup'), '-h', '127.0.0.1', '-p', String(primary.port), '-U', 'postgres',
    '-D', standby.dir, '-R', '-X', 'stream', '-c', 'fast', '-d', 'application_name=standby'])
  standby.configure({ port: standby.port, ...(options.applyDelayMs === undefined ? {} : { recovery_min_apply_delay: `${options.applyDelayMs}ms` }) })
  await standby.start()
  await primary.waitFor('the standby to stream', async () =>
    (await primary.query("SELECT 1 FROM pg_stat_replication WHERE application_name = 'standby' AND state = 'streaming'")).length === 1)

  if (options.synchronous === true) {
    await primary.query("ALTER SYSTEM SET synchronous_standby_names = 'standby'")
    await primary.query('SELECT pg_reload_conf()')
    await primary.waitFor('the standby to be synchronous', async () =>
      (await primary.query("SELECT 1 FROM pg_stat_replication WHERE application_name = 'standby' AND sync_state = 'sync'")).length === 1)
  }
  return { primary, standby }
}
