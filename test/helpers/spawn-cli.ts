import { spawn, type ChildProcess } from 'node:child_process'
import { once } from 'node:events'
import { join } from 'node:path'
import { TEST_HASH_COST_ENV } from './password-cost.js'

/** The built bin, run as `node dist/cli/main.js` exactly as npm's bin link runs it. */
export const CLI_PATH = join(import.meta.dirname, '..', '..', 'dist', 'cli', 'main.js')

/** One key as `animal-store keys list --json` prints it. */
export interface KeyJson {
  id: string
  label: string | null
  prefix: string
  createdAt: string
  lastUsedAt: string | null
  revokedAt: string | null
  scopes: string[]
  expiresAt: string | null
  rolledTo: string | null
  state: 'live' | 'revoked' | 'expired'
}

export interface CliResult {
  code: number | null
  stdout: string
  stderr: string
}

/** The environment of a CLI run on the SQLite file: passwords hashed at the tests' cost (TEST_HASH_COST_ENV). */
export function cliEnv (dbPath: string, extra: Record<string, string> = {}): Record<string, string> {
  return { PATH: process.env.PATH ?? '', DATABASE_URL: `sqlite:${dbPath}`, LOG_LEVEL: 'info', ...TEST_HASH_COST_ENV, ...extra }
}

/** Runs the CLI to completion. */
export async function runCli (args: string[], env: Record<string, string>): Promise<CliResult> {
  return runNode([CLI_PATH, ...args], env)
}

/** Runs `node <args>` to completion with exactly the given environment, collecting its output. */
export async function runNode (args: string[], env: Record<string, string>, cwd?: string): Promise<CliResult> {
  const child = spawn(process.execPath, args, { env, cwd, stdio: ['ignore', 'pipe', 'pipe'] })
  let stdout = ''
  let stderr = ''
  child.stdout.setEncoding('utf8').on('data', (chunk: string) => { stdout += chunk })
  child.stderr.setEncoding('utf8').on('data', (chunk: string) => { stderr += chunk })
  const [code] = await once(child, 'close') as [number | null]
  return { code, stdout, stderr }
}

export interface ServerProcess {
  child: ChildProcess
  baseUrl: string
  /** Every log line the server printed so far, parsed. */
  logs: Array<Record<string, unknown>>
  /** Resolves with the exit code (or signal) once the process has ended. */
  exited: Promise<{ code: number | null, signal: NodeJS.Signals | null }>
}
