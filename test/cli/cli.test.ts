import { spawn } from 'node:child_process'
import { once } from 'node:events'
import { describe, test, type TestContext } from 'node:test'
import assert from 'node:assert/strict'
import { existsSync, readdirSync, readFileSync } from 'node:fs'
import { join } from 'node:path'
import { generateApiKey, MAX_LIVE_KEYS, newKeyId } from '../../src/core/api-keys.js'
import { openSqliteStore } from '../../src/storage/sqlite/sqlite-store.js'
import { tempDir } from '../helpers/build-app.js'
import { launchServer } from '../helpers/server-process.js'
import { CLI_PATH, cliEnv, runCli, type CliResult, type KeyJson } from '../helpers/spawn-cli.js'

const KEY_PATTERN = /^ask_[0-9A-Za-z]{38}$/
const STACK_FRAME = /\n\s+at /

function show (result: CliResult): string {
  return `exit ${result.code}\n--- stdout\n${result.stdout}--- stderr\n${result.stderr}`
}

function newEnv (t: TestContext): { env: Record<string, string>, dbPath: string } {
  const dbPath = join(tempDir(t), 'animal-store.sqlite')
  return { env: cliEnv(dbPath), dbPath }
}

async function ok (args: string[], env: Record<string, string>): Promise<CliResult> {
  const result = await runCli(args, env)
  assert.equal(result.code, 0, `${args.join(' ')}\n${show(result)}`)
  return result
}

/** Asserts exit 1, a message on stderr matching `message`, and no stack trace. */
async function fails (args: string[], env: Record<string, string>, message: RegExp): Promise<CliResult> {
  const result = await runCli(args, env)
  assert.equal(result.code, 1, `${args.join(' ')}\n${show(result)}`)
  assert.match(result.stderr, message, show(result))
  assert.doesNotMatch(result.stderr, STACK_FRAME, show(result))
  return result
}

function lastLine (stdout: string): string {
  assert.ok(stdout.endsWith('\n'), `stdout does not end with a newline: ${JSON.stringify(stdout)}`)
  return stdout.slice(0, -1).split('\n').at(-1) ?? ''
}

async function createKey (env: Record<string, string>, email: string, label = 'ci'): Promise<string> {
  const result = await ok(['keys', 'create', '--email', email, '--label', label], env)
  const key = lastLine(result.stdout)
  assert.match(key, KEY_PATTERN, show(result))
  return key
}

async function listKeys (env: Record<string, string>, email: string): Promise<KeyJson[]> {
  const result = await ok(['keys', 'list', '--email', email, '--json'], env)
  return JSON.parse(result.stdout) as KeyJson[]
}

const ISO = /^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{3}Z$/

describe('animal-store CLI', () => {
  describe('help', { concurrency: true }, () => {
    // Beyond naming the command, what some pages must say (a string: those words; a pattern: a match): one run
    // of the CLI checks every fact of its page.
    const keysCreate = [/--scopes S/, /--expires-in D/, /--expires-at T/, /animals:read, animals:write/]
    const commands: Array<[string[], Array<string | RegExp>]> = [
      [['--help'], ['animal-store keys roll <keyId> [--grace D]', 'animal-store keys usage <keyId>', 'animal-store audit --email E']],
      [['serve', '--help'], []],
      [['migrate', '--help'], []],
      [['accounts', '--help'], []],
      [['accounts', 'create', '--help'], []],
      [['keys', '--help'], ['create', 'list', 'revoke', 'roll', 'usage'].map((command) => `animal-store keys ${command}`)],
      [['keys', 'create', '--help'], keysCreate],
      // -h is the same option as --help: one command checks it.
      [['keys', 'create', '-h'], keysCreate],
      [['keys', 'list', '--help'], [/"scopes"/, /"expiresAt"/, /"rolledTo"/, /"state"/]],
      [['keys', 'revoke', '--help'], []],
      [['keys', 'roll', '--help'], [/--grace D/, /default 24 hours/, /0 ends the old key at once/]],
      [['keys', 'usage', '--help'], [/--days N/, /1 to 90/, /"daily"/, /"hourly"/, /"operations"/, /"totals"/]],
      [['audit', '--help'], [/--email E/, /--limit N/, /default 50/, /"actor"/, /key_rolled/]],
      [['accounts', 'set-password', '--help'], []],
      [['accounts', 'reset-2fa', '--help'], []],
      [['config', '--help'], []],
      [['seed', '--help'], []],
      [['backup', '--help'], []]
    ]
    const groups = new Set(['', 'accounts', 'keys'])
    for (const [args, parts] of commands) {
      test(`animal-store ${args.join(' ')} prints usage on stdout, exits 0 and touches no database`, { timeout: 60_000 }, async (t) => {
        const dir = tempDir(t)
        const result = await ok(args, cliEnv(join(dir, 'animal-store.sqlite')))
        assert.match(result.stdout, /Usage:/, show(result))
        const named = args.filter((arg) => arg !== '--help' && arg !== '-h').join(' ')
        assert.ok(result.stdout.includes(`animal-store ${named}`), `the usage does not name "animal-store ${named}"\n${show(result)}`)
        // A command's own page starts with its usage line.
        if (!groups.has(named)) assert.ok(result.stdout.startsWith(`Usage: animal-store ${named}`), show(result))
        for (const part of parts) {
          if (typeof part === 'string') assert.ok(result.stdout.includes(part), `the usage lacks "${part}"\n${show(result)}`)
          else assert.match(result.stdout, part, show(result))
        }
        assert.equal(result.stderr, '', show(result))
        assert.deepEqual(readdirSync(dir), [], '--help must not create the database')
      })
    }
  })

  describe('accounts create', { concurrency: true }, () => {
    test('creates an account with an email and a name and exits 0', { timeout: 60_000 }, async (t) => {
      const { env } = newEnv(t)
      const result = await ok(['accounts', 'create', '--email', 'alice@example.com', '--name', 'Alice'], env)
      assert.match(result.stdout, /alice@example\.com/, show(result))
      assert.equal(result.stderr, '', show(result))
    })

    test('creates an account with an email only and exits 0, and refuses a second one with the same email, also differing only in case, with exit 1', { timeout: 60_000 }, async (t) => {
      const { env } = newEnv(t)
      await ok(['accounts', 'create', '--email', 'alice@example.com'], env)
      await fails(['accounts', 'create', '--email', 'alice@example.com'], env, /already exists/)
      await fails(['accounts', 'create', '--email', 'Alice@Example.COM', '--name', 'Other'], env, /alice@example\.com.*already exists|already exists.*alice@example\.com/i)
    })

    test('refuses an invalid email with exit 1', { timeout: 60_000 }, async (t) => {
      const { env } = newEnv(t)
      await fails(['accounts', 'create', '--email', 'not-an-email'], env, /not-an-email.*not a valid email/)
    })

    test('refuses a missing --email with exit 1', { timeout: 60_000 }, async (t) => {
      const { env } = newEnv(t)
      await fails(['accounts', 'create', '--name', 'Nobody'], env, /--email is required/)
    })

    test('refuses an unknown option with exit 1', { timeout: 60_000 }, async (t) => {
      const { env } = newEnv(t)
      await fails(['accounts', 'create', '--email', 'alice@example.com', '--bogus', 'x'], env, /--bogus/)
    })
  })

  describe('keys', { concurrency: 2 }, () => {
    // One account's keys through their life: each step's output is checked, and the next step builds on it.
    test('keys create prints the key alone on the last line, keys list a table and --json {id, label, prefix, createdAt, lastUsedAt, revokedAt, scopes, expiresAt, rolledTo, state, mode} without the secret, keys revoke <id> a revokedAt; an unknown id exits 1', { timeout: 120_000 }, async (t) => {
      const { env } = newEnv(t)
      await ok(['accounts', 'create', '--email', 'alice@example.com'], env)
      const created = await ok(['keys', 'create', '--email', 'alice@example.com', '--label', 'laptop'], env)
      const first = lastLine(created.stdout)
      assert.match(first, KEY_PATTERN, show(created))
      assert.equal(created.stderr, '', show(created))

      const listed = await ok(['keys', 'list', '--email', 'alice@example.com'], env)
      const [header, ...rows] = listed.stdout.trimEnd().split('\n')
      for (const column of ['ID', 'LABEL', 'PREFIX', 'SCOPES', 'CREATED', 'EXPIRES', 'LAST USED', 'REVOKED', 'STATE']) {
        assert.ok(header?.includes(column), `header lacks ${column}\n${show(listed)}`)
      }
      assert.equal(rows.length, 1, show(listed))
      assert.match(rows[0] ?? '', /^key_\w+\s+laptop\s+ask_\w+\s+animals:read,animals:write\s+\S+\s+never\s+never\s+-\s+live$/, show(listed))
      assert.ok(rows[0]?.includes(first.slice(0, 12)), `the row does not show the prefix ${first.slice(0, 12)}\n${show(listed)}`)
      assert.ok(!listed.stdout.includes(first), show(listed))
      assert.ok(!listed.stdout.includes(first.slice(12)), show(listed))

      const second = await createKey(env, 'alice@example.com', 'ci')
      const result = await ok(['keys', 'list', '--email', 'alice@example.com', '--json'], env)
      assert.ok(!result.stdout.includes(first) && !result.stdout.includes(second), show(result))
      const keys = JSON.parse(result.stdout) as KeyJson[]
      assert.ok(Array.isArray(keys), show(result))
      assert.equal(keys.length, 2, show(result))
      for (const entry of keys) {
        assert.deepEqual(Object.keys(entry).sort(), ['createdAt', 'expiresAt', 'id', 'label', 'lastUsedAt', 'mode', 'prefix', 'revokedAt', 'rolledTo', 'scopes', 'state'], show(result))
        assert.match(entry.id, /^key_[0-9A-Za-z]+$/)
        assert.match(entry.createdAt, ISO)
        assert.equal(entry.lastUsedAt, null)
        assert.equal(entry.revokedAt, null)
        assert.deepEqual(entry.scopes, ['animals:read', 'animals:write'], 'a key made without --scopes has both')
        assert.equal(entry.expiresAt, null)
        assert.equal(entry.rolledTo, null)
        assert.equal(entry.state, 'live')
      }
      assert.deepEqual(keys.map((entry) => [entry.label, entry.prefix]).sort(), [
        ['ci', second.slice(0, 12)],
        ['laptop', first.slice(0, 12)]
      ].sort())

      const before = keys.find((entry) => entry.label === 'ci')
      assert.ok(before)
      const startedAt = Date.now()
      await ok(['keys', 'revoke', before.id], env)
      const after = (await listKeys(env, 'alice@example.com')).find((entry) => entry.id === before.id)
      assert.equal(after?.id, before.id)
      assert.match(after?.revokedAt ?? '', ISO)
      const revokedAt = Date.parse(after?.revokedAt ?? '')
      assert.ok(revokedAt >= startedAt - 1000 && revokedAt <= Date.now(), `revokedAt ${after?.revokedAt} is outside the command window`)
      assert.equal(after?.state, 'revoked')
      assert.deepEqual({ ...after, revokedAt: null, state: 'live' }, before)

      await fails(['keys', 'revoke', 'key_doesnotexist00'], env, /no key has the id key_doesnotexist00/)
    })

    test('keys create for an unknown account exits 1 with a clear message', { timeout: 60_000 }, async (t) => {
      const { env } = newEnv(t)
      const result = await fails(['keys', 'create', '--email', 'ghost@example.com', '--label', 'x'], env, /no account has the email ghost@example\.com/)
      assert.doesNotMatch(result.stdout, /ask_/, show(result))
    })

    test('refuses control characters in an email, a name, a label or a password with exit 1 naming the field, and stores nothing', { timeout: 60_000 }, async (t) => {
      const { env, dbPath } = newEnv(t)
      await fails(['accounts', 'create', '--email', 'a\u0001b@example.com'], env, /^error: The email address must not contain control characters \(it contains U\+0001\)\.$/m)
      await fails(['accounts', 'create', '--email', 'ops@example.com', '--name', 'Ops\tTeam'], env, /^error: The name must not contain control characters \(it contains U\+0009\)\.$/m)
      await ok(['accounts', 'create', '--email', 'ops@example.com'], env)
      await fails(['keys', 'create', '--email', 'ops@example.com', '--label', 'line\nbreak'], env, /^error: The label must not contain control characters \(it contains U\+000A\)\.$/m)
      await fails(['keys', 'list', '--email', 'ops@example.com\u007f'], env, /^error: The email address must not contain control characters \(it contains U\+007F\)\.$/m)
      const child = spawn(process.execPath, [CLI_PATH, 'accounts', 'set-password', '--email', 'ops@example.com'], { env, stdio: ['pipe', 'pipe', 'pipe'] })
      let stderr = ''
      child.stderr.setEncoding('utf8').on('data', (chunk: string) => { stderr += chunk })
      child.stdout.resume()
      child.stdin.end('a long pass\u0000phrase here\n')
      const [code] = await once(child, 'close') as [number | null]
      assert.equal(code, 1, stderr)
      assert.match(stderr, /^error: The password must not contain control characters \(it contains U\+0000\)\.$/m)
      assert.deepEqual(await listKeys(env, 'ops@example.com'), [])
      const store = openSqliteStore(dbPath)
      t.after(() => store.close())
      assert.equal((await store.accounts.findCredentials('ops@example.com'))?.passwordHash, null)
    })

    test('refuses C1 controls everywhere and bidirectional controls in an email and a label with exit 1 naming the field; a name keeps the marks', { timeout: 60_000 }, async (t) => {
      const { env } = newEnv(t)
      await fails(['accounts', 'create', '--email', 'ops@example.com\u0085'], env, /^error: The email address must not contain control characters \(it contains U\+0085\)\.$/m)
      await fails(['accounts', 'create', '--email', 'moc.elpmaxe@\u202esdo'], env, /^error: The email address must not contain bidirectional formatting characters \(it contains U\+202E\)\.$/m)
      await fails(['accounts', 'create', '--email', 'ops@example.com', '--name', 'Ops\u2067Team'], env, /^error: The name must not contain bidirectional formatting characters \(it contains U\+2067\)\.$/m)
      await ok(['accounts', 'create', '--email', 'ops@example.com', '--name', '\u05e6\u05d5\u05d5\u05ea\u200f 2'], env)
      await fails(['keys', 'create', '--email', 'ops@example.com', '--label', 'ci\u200e'], env, /^error: The label must not contain bidirectional formatting characters \(it contains U\+200E\)\.$/m)
      await fails(['keys', 'create', '--email', 'ops@example.com', '--label', 'prod\u009b'], env, /^error: The label must not contain control characters \(it contains U\+009B\)\.$/m)
      assert.deepEqual(await listKeys(env, 'ops@example.com'), [])
    })

    test(`keys create refuses a key beyond ${MAX_LIVE_KEYS} live ones with exit 1; a revocation makes room`, { timeout: 60_000 }, async (t) => {
      const { env, dbPath } = newEnv(t)
      await ok(['accounts', 'create', '--email', 'full@example.com'], env)
      const store = openSqliteStore(dbPath)
      t.after(() => store.close())
      await store.migrate()
      const account = await store.accounts.findByEmail('full@example.com')
      assert.ok(account)
      for (let index = 0; index < MAX_LIVE_KEYS; index++) {
        const generated = generateApiKey()
        await store.apiKeys.create({ id: newKeyId(), accountId: account.id, label: null, prefix: generated.prefix, hash: generated.hash }, { maxLive: MAX_LIVE_KEYS })
      }
      const refused = await fails(['keys', 'create', '--email', 'full@example.com'], env, /^error: the account has 100 live keys, the most an account may have \(a rolled key counts until its grace period ends\); revoke one it no longer uses first$/m)
      assert.doesNotMatch(refused.stdout, /ask_/)
      const [first] = await listKeys(env, 'full@example.com')
      await ok(['keys', 'revoke', first?.id ?? ''], env)
      await createKey(env, 'full@example.com')
    })
  })

  describe('migrate', () => {
    test('exits 0 on a fresh database and again on an up-to-date one', { timeout: 60_000 }, async (t) => {
      const { env, dbPath } = newEnv(t)
      await ok(['migrate'], env)
      assert.ok(existsSync(dbPath))
      const again = await ok(['migrate'], env)
      assert.match(again.stdout, /up to date/, show(again))
    })
  })

  describe('security', () => {
    // One server for both checks: the key is scanned for in the files while the server runs, and again once it stopped.
    test('a key created by the CLI works against a running server, which refuses it within 1 second of keys revoke exiting; its secret never reaches the database file or its WAL', { timeout: 60_000 }, async (t) => {
      const { env, dbPath } = newEnv(t)
      await ok(['accounts', 'create', '--email', 'alice@example.com'], env)
      const key = await createKey(env, 'alice@example.com')
      const [row] = await listKeys(env, 'alice@example.com')
      assert.ok(row)
      const server = launchServer(t, env)
      const baseUrl = await server.listening
      const auth = { authorization: `Bearer ${key}` }
      for (let i = 0; i < 3; i++) {
        const response = await fetch(`${baseUrl}/v1/pets`, { headers: auth })
        assert.equal(response.status, 200, await response.text())
      }
      const check = (when: string): void => {
        const files = [dbPath, `${dbPath}-wal`].filter((file) => existsSync(file))
        assert.ok(files.includes(dbPath), `${when}: no database file`)
        // Positive control: the displayed prefix is stored, so the scan does see key material.
        const prefix = Buffer.from(key.slice(0, 12), 'utf8')
        assert.ok(files.some((file) => readFileSync(file).includes(prefix)), `${when}: the key prefix is in no database file`)
        for (const file of files) {
          const bytes = readFileSync(file)
          for (const secret of [key, key.slice(12)]) {
            assert.equal(bytes.indexOf(Buffer.from(secret, 'utf8')), -1, `${when}: ${file} contains the secret`)
            assert.equal(bytes.indexOf(Buffer.from(secret, 'utf16le')), -1, `${when}: ${file} contains the secret (UTF-16)`)
          }
        }
      }
      check('while the server runs')

      await ok(['keys', 'revoke', row.id], env)
      const revokedAt = performance.now()
      let refusedAfter: number | undefined
      let lastStatus: number | undefined
      while (performance.now() - revokedAt < 1000) {
        const response = await fetch(`${baseUrl}/v1/pets`, { headers: auth })
        lastStatus = response.status
        const body = await response.text()
        if (response.status === 401) {
          refusedAfter = performance.now() - revokedAt
          assert.equal(response.headers.get('www-authenticate'), 'Bearer realm="animal-store", error="invalid_token"')
          assert.equal((JSON.parse(body) as { code: string }).code, 'unauthorized', body)
          break
        }
        assert.equal(response.status, 200, body)
      }
      assert.ok(refusedAfter !== undefined && refusedAfter < 1000, `the server still accepted the revoked key 1000 ms after keys revoke exited (last status ${lastStatus})`)
      assert.equal(server.child.exitCode, null, 'the server must keep running')

      server.child.kill('SIGTERM')
      assert.deepEqual(await server.exited, { code: 0, signal: null })
      check('after the server stopped')
    })
  })
})
