import { describe, test } from 'node:test'
import assert from 'node:assert/strict'
import { once } from 'node:events'
import { readFileSync } from 'node:fs'
import { createServer, type AddressInfo } from 'node:net'
import { join } from 'node:path'
import { tempDir } from '../helpers/build-app.js'
import { POSTGRES_URL, postgresAvailable } from '../helpers/postgres.js'
import { dbFile, launchServer } from '../helpers/server-process.js'
import { cliEnv, runCli, type CliResult } from '../helpers/spawn-cli.js'

const STACK_FRAME = /\n\s+at /
const PASSWORD = 's3cret-Pa55word'

function show (result: { code: number | null, stdout: string, stderr: string }): string {
  return `exit ${result.code}\n--- stdout\n${result.stdout}--- stderr\n${result.stderr}`
}

/** A TCP port with nothing listening on it: taken from the kernel, then released. */
async function closedPort (): Promise<number> {
  const server = createServer().listen(0, '127.0.0.1')
  await once(server, 'listening')
  const { port } = server.address() as AddressInfo
  server.close()
  await once(server, 'close')
  return port
}

/** Exit 1 with one line on stderr matching `message`, no stack trace anywhere, nothing secret. */
function assertOneLineFailure (result: { code: number | null, stdout: string, stderr: string }, message: RegExp): void {
  assert.equal(result.code, 1, show(result))
  const lines = result.stderr.trimEnd().split('\n')
  assert.equal(lines.length, 1, `one line on stderr\n${show(result)}`)
  assert.match(lines[0] ?? '', message, show(result))
  assert.doesNotMatch(`${result.stdout}\n${result.stderr}`, STACK_FRAME, `no stack trace\n${show(result)}`)
  assert.doesNotMatch(`${result.stdout}\n${result.stderr}`, /"stack"/, `no stack trace in a log line\n${show(result)}`)
  assert.equal(`${result.stdout}\n${result.stderr}`.includes(PASSWORD), false, `the password is never printed\n${show(result)}`)
}

describe('start-up', () => {
  test('says where the API, the reference and the portal are, once it listens', { timeout: 60_000 }, async (t) => {
    const server = launchServer(t, cliEnv(dbFile(tempDir(t))))
    const baseUrl = await server.listening
    const line = server.logs.find((entry) => typeof entry.msg === 'string' && entry.msg.startsWith('Animal Store listening on '))
    assert.equal(line?.msg, `Animal Store listening on ${baseUrl}: API /v1, reference /docs, portal /portal`)
    assert.equal(line.level, 30, 'an info line')

    const root = await fetch(`${baseUrl}/`, { redirect: 'manual' })
    assert.equal(root.status, 302)
    assert.equal(root.headers.get('location'), '/docs')
    const followed = await fetch(`${baseUrl}/`)
    assert.equal(followed.status, 200)
    assert.match(followed.headers.get('content-type') ?? '', /^text\/html/)
  })

  test('a port already in use is one line on stderr that names PORT, then exit 1', { timeout: 60_000 }, async (t) => {
    const holder = createServer().listen(0, '127.0.0.1')
    t.after(() => holder.close())
    await once(holder, 'listening')
    const { port } = holder.address() as AddressInfo
    const server = launchServer(t, { ...cliEnv(dbFile(tempDir(t))), PORT: String(port) })
    await assert.rejects(server.listening, /server exited \(1\)/)
    await server.exited
    const result = { code: (await server.exited).code, stdout: server.lines.join('\n'), stderr: server.stderr() }
    assertOneLineFailure(result, new RegExp(`^error: port ${port} is already in use on 127\\.0\\.0\\.1: .*\\bPORT=`))
    assert.equal(server.logs.some((entry) => entry.level === 60), false, `no fatal log line with the error on stdout\n${show(result)}`)
  })

  test('an unreachable PostgreSQL is named by host and port with its cause, without the password', { timeout: 60_000 }, async (t) => {
    const port = await closedPort()
    const server = launchServer(t, { ...cliEnv(dbFile(tempDir(t))), DATABASE_URL: `postgres://app:${PASSWORD}@127.0.0.1:${port}/animal_store` })
    await assert.rejects(server.listening, /server exited \(1\)/)
    const result = { code: (await server.exited).code, stdout: server.lines.join('\n'), stderr: server.stderr() }
    assertOneLineFailure(result, new RegExp(`^error: cannot reach PostgreSQL at 127\\.0\\.0\\.1:${port}: connect ECONNREFUSED 127\\.0\\.0\\.1:${port}\\b`))
  })
})

describe('the CLI guides a newcomer', () => {
  const env = (t: Parameters<typeof tempDir>[0]): Record<string, string> => cliEnv(join(tempDir(t), 'animal-store.sqlite'))

  test('animal-store --version prints the version of package.json', { timeout: 60_000 }, async (t) => {
    const { version } = JSON.parse(readFileSync(join(import.meta.dirname, '..', '..', 'package.json'), 'utf8')) as { version: string }
    for (const flag of ['--version', '-v']) {
      const result = await runCli([flag], env(t))
      assert.equal(result.code, 0, show(result))
      assert.equal(result.stdout, `animal-store ${version}\n`)
      assert.equal(result.stderr, '')
    }
  })

  // The command is the words before the first option: the options are neither shown as part of it nor matched.
  const mistyped: Array<[string[], RegExp]> = [
    [['kyes', 'create', '--email', 'dev@example.com'], /did you mean: animal-store keys create\b/],
    [['keys', '--email', 'dev@example.com', 'create'], /keys has these commands: keys create, keys list, keys revoke, keys roll, keys usage/],
    [['sevre'], /did you mean: animal-store serve\b/],
    [['acounts', 'create'], /did you mean: animal-store accounts create\b/],
    [['keys', 'delete', 'key_1'], /keys has these commands: keys create, keys list, keys revoke, keys roll, keys usage/]
  ]
  for (const [args, suggestion] of mistyped) {
    test(`animal-store ${args.join(' ')} suggests the closest command and exits 1`, { timeout: 60_000 }, async (t) => {
      const result = await runCli(args, env(t))
      const command = args.slice(0, 2).filter((_, index) => !args.slice(0, index + 1).some((arg) => arg.startsWith('-'))).join(' ')
      assertOneLineFailure(result, new RegExp(`^unknown command: ${command}; ${suggestion.source}`))
      assert.equal(result.stdout, '')
    })
  }

  test('a DATABASE_URL that is a bare path suggests sqlite:<path>', { timeout: 60_000 }, async (t) => {
    const path = join(tempDir(t), 'animals.sqlite')
    const result: CliResult = await runCli(['migrate'], { ...env(t), DATABASE_URL: path })
    assert.equal(result.code, 1, show(result))
    assert.ok(result.stderr.includes(`DATABASE_URL=sqlite:${path}`), show(result))
    assert.doesNotMatch(result.stderr, STACK_FRAME, show(result))
  })

  test('a PostgreSQL without the database: the server is said to be running, and createdb is suggested', { timeout: 60_000 }, async (t) => {
    if (!await postgresAvailable()) {
      t.skip('PostgreSQL is not reachable')
      return
    }
    const url = new URL(POSTGRES_URL)
    url.pathname = `/animal_store_missing_${process.pid}`
    const result = await runCli(['keys', 'list', '--email', 'dev@example.com'], { ...env(t), DATABASE_URL: url.toString() })
    assertOneLineFailure(result, new RegExp(`^error: PostgreSQL at ${url.hostname.replaceAll('.', '\\.')}:${url.port || '5432'} is running but has no database "animal_store_missing_${process.pid}": create it \\(createdb animal_store_missing_${process.pid}, as a user allowed to\\), or name an existing one in DATABASE_URL$`))
  })

  test('a command for an account that does not exist points to accounts create', { timeout: 60_000 }, async (t) => {
    const result = await runCli(['keys', 'list', '--email', 'ghost@example.com'], env(t))
    assertOneLineFailure(result, /^error: no account has the email ghost@example\.com: create it with animal-store accounts create --email ghost@example\.com$/)
  })

  test('a command on an unreachable PostgreSQL names its host and port with the cause, without the password', { timeout: 60_000 }, async (t) => {
    const port = await closedPort()
    const result = await runCli(['keys', 'list', '--email', 'dev@example.com'], { ...env(t), DATABASE_URL: `postgresql://app:${PASSWORD}@127.0.0.1:${port}/animal_store` })
    assertOneLineFailure(result, new RegExp(`^error: cannot reach PostgreSQL at 127\\.0\\.0\\.1:${port}: connect ECONNREFUSED 127\\.0\\.0\\.1:${port}\\b`))
  })
})
