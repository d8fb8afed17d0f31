import { spawn, type ChildProcess } from 'node:child_process'
import { once } from 'node:events'
import { join } from 'node:path'
import { createInterface } from 'node:readline'
import { TEST_DEFAULTS } from './build-app.js'

/** The built bin, run as `node dist/cli/main.js` exactly as npm's bin link runs it. */
export const CLI_PATH = join(import.meta.dirname, '..', '..', 'dist', 'cli', 'main.js')

export interface CliResult {
  code: number | null
  stdout: string
  stderr: string
}

export function cliEnv (dbPath: string, extra: Record<string, string> = {}): Record<string, string> {
  return { PATH: process.env.PATH ?? '', DATABASE_URL: `sqlite:${dbPath}`, LOG_LEVEL: 'info', ...extra }
}

/** Runs the CLI to completion. */
export async function runCli (args: string[], env: Record<string, string>): Promise<CliResult> {
  const child = spawn(process.execPath, [CLI_PATH, ...args], { env, stdio: ['ignore', 'pipe', 'pipe'] })
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

/**
 * Starts `animal-store serve` on an ephemeral port and resolves when its log says it
 * listens: no fixed sleeps.
 */
export async function spawnServer (env: Record<string, string>): Promise<ServerProcess> {
  const child = spawn(process.execPath, [CLI_PATH, 'serve'], {
    env: { HOST: '127.0.0.1', PORT: '0', ...TEST_DEFAULTS, ...env },
    stdio: ['ignore', 'pipe', 'pipe']
  })
  const exited = new Promise<{ code: number | null, signal: NodeJS.Signals | null }>((resolve) => {
    child.once('exit', (code, signal) => resolve({ code, signal }))
  })
  const logs: Array<Record<string, unknown>> = []
  let stderr = ''
  child.stderr?.setEncoding('utf8').on('data', (chunk: string) => { stderr += chunk })
  const lines = createInterface({ input: child.stdout! })
  const baseUrl = await new Promise<string>((resolve, reject) => {
    lines.on('line', (line) => {
      let entry: Record<string, unknown>
      try {
        entry = JSON.parse(line) as Record<string, unknown>
      } catch {
        return
      }
      logs.push(entry)
      const match = typeof entry.msg === 'string' ? /Server listening at (http:\/\/127\.0\.0\.1:\d+)/.exec(entry.msg) : null
      if (match?.[1]) resolve(match[1])
    })
    void exited.then(({ code, signal }) => reject(new Error(`server exited (${code ?? signal}) before listening: ${stderr}${JSON.stringify(logs)}`)))
  })
  return { child, baseUrl, logs, exited }
}
