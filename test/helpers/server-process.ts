import { spawn } from 'node:child_process'
import { join } from 'node:path'
import { createInterface } from 'node:readline'
import type { TestContext } from 'node:test'
import { createAccount, createApiKey } from '../../src/services/accounts.js'
import { openSqliteStore } from '../../src/storage/sqlite/sqlite-store.js'
import { TEST_DEFAULTS } from './build-app.js'
import { CLI_PATH, type ServerProcess } from './spawn-cli.js'

/**
 * A `serve` process on an ephemeral port: SIGKILLed in t.after whatever happens (even if
 * it never listens), every raw stdout line kept, and the handle returned before the server
 * listens, so a start that fails can be observed; `listening` resolves from its log, never
 * from a fixed sleep.
 */
export interface ServerHandle extends Omit<ServerProcess, 'baseUrl'> {
  /** Every stdout line, exactly as printed. */
  lines: string[]
  /** Everything printed on stderr so far. */
  stderr: () => string
  /** Resolves with the base URL once the server logs that it listens; rejects if it exits first. */
  listening: Promise<string>
  /** Resolves with the first parsed log line matching the predicate (already printed or future). */
  waitForLog: (predicate: (entry: Record<string, unknown>) => boolean) => Promise<Record<string, unknown>>
}

/** `cores` pins the process to those CPUs (a `taskset -c` list), as an operator may. */
export function launchServer (t: TestContext, env: Record<string, string>, { cores }: { cores?: string } = {}): ServerHandle {
  const command = [process.execPath, CLI_PATH, 'serve']
  const [file = '', ...args] = cores === undefined ? command : ['taskset', '-c', cores, ...command]
  const child = spawn(file, args, {
    env: { HOST: '127.0.0.1', PORT: '0', ...TEST_DEFAULTS, ...env },
    stdio: ['ignore', 'pipe', 'pipe']
  })
  const exited = new Promise<{ code: number | null, signal: NodeJS.Signals | null }>((resolve) => {
    child.once('exit', (code, signal) => resolve({ code, signal }))
  })
  t.after(async () => {
    if (child.exitCode === null && child.signalCode === null) {
      child.kill('SIGKILL')
      await exited
    }
  })

  const lines: string[] = []
  const logs: Array<Record<string, unknown>> = []
  const waiters: Array<{ predicate: (entry: Record<string, unknown>) => boolean, resolve: (entry: Record<string, unknown>) => void }> = []
  let stderr = ''
  child.stderr.setEncoding('utf8').on('data', (chunk: string) => { stderr += chunk })
  createInterface({ input: child.stdout }).on('line', (line) => {
    lines.push(line)
    let entry: Record<string, unknown>
    try {
      entry = JSON.parse(line) as Record<string, unknown>
    } catch {
      return
    }
    logs.push(entry)
    for (const waiter of [...waiters]) {
      if (waiter.predicate(entry)) {
        waiters.splice(waiters.indexOf(waiter), 1)
        waiter.resolve(entry)
      }
    }
  })

  const waitForLog = async (predicate: (entry: Record<string, unknown>) => boolean): Promise<Record<string, unknown>> => {
    const seen = logs.find(predicate)
    if (seen !== undefined) return seen
    return new Promise((resolve, reject) => {
      waiters.push({ predicate, resolve })
      void exited.then(({ code, signal }) => reject(new Error(`server exited (${code ?? signal}) before the expected log line: ${stderr}\n${lines.join('\n')}`)))
    })
  }

  const listening = waitForLog((entry) => typeof entry.msg === 'string' && /^Animal Store listening on http:\/\/127\.0\.0\.1:\d+/.test(entry.msg))
    .then((entry) => (/(http:\/\/127\.0\.0\.1:\d+)/.exec(entry.msg as string) as RegExpExecArray)[1] as string)
  // The failure is observed by whoever awaits `listening`; do not let it go unhandled meanwhile.
  listening.catch(() => {})

  return { child, logs, lines, exited, stderr: () => stderr, listening, waitForLog }
}

/** Creates (and migrates) the database file with one account and one key; returns the key. */
export async function seedApiKey (dbPath: string, email = 'ops@example.com'): Promise<string> {
  const store = openSqliteStore(dbPath)
  try {
    await store.migrate()
    if (await store.accounts.findByEmail(email) === undefined) await createAccount(store, { email })
    return (await createApiKey(store, { email, label: 'process tests' })).key
  } finally {
    await store.close()
  }
}

export const dbFile = (dir: string): string => join(dir, 'animal-store.sqlite')
