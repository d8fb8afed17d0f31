import { execFile } from 'node:child_process'
import { promisify } from 'node:util'
import { test } from 'node:test'
import assert from 'node:assert/strict'
import { createTestSchema, postgresAvailable } from '../helpers/postgres.js'
import { launchServer } from '../helpers/server-process.js'
import { runCli } from '../helpers/spawn-cli.js'

const run = promisify(execFile)

test('no API key appears in a PostgreSQL dump or in the logs, even at trace level', { timeout: 60_000 }, async (t) => {
  if (!await postgresAvailable()) {
    t.skip('PostgreSQL is not reachable')
    return
  }
  const databaseUrl = await createTestSchema(t)
  const env = { PATH: process.env.PATH ?? '', DATABASE_URL: databaseUrl, LOG_LEVEL: 'trace' }
  assert.equal((await runCli(['accounts', 'create', '--email', 'dump@example.com'], env)).code, 0)
  const created = await runCli(['keys', 'create', '--email', 'dump@example.com'], env)
  const key = created.stdout.trim().split('\n').at(-1) ?? ''
  assert.match(key, /^ask_/)

  const server = launchServer(t, env)
  const baseUrl = await server.listening
  for (const authorization of [`Bearer ${key}`, `bearer ${key}x`, `Basic ${Buffer.from(`user:${key}`).toString('base64')}`]) {
    await fetch(`${baseUrl}/v1/pets`, { headers: { authorization } })
  }
  await fetch(`${baseUrl}/v1/pets`, { method: 'POST', headers: { authorization: `Bearer ${key}`, 'content-type': 'application/json' }, body: '{"name":"a","categoryId":1}' })
  server.child.kill('SIGTERM')
  assert.equal((await server.exited).code, 0)

  const url = new URL(databaseUrl)
  const schema = (url.searchParams.get('options') ?? '').replace('-c search_path=', '')
  url.search = ''
  const { stdout: dump } = await run('pg_dump', ['--schema', schema, '--data-only', url.toString()], { maxBuffer: 64 * 1024 * 1024 })
  assert.match(dump, /dump@example\.com/, 'the dump holds the data (the search works)')
  const secret = key.slice('ask_'.length)
  assert.equal(dump.includes(secret), false, 'the key is not in the database dump')
  assert.equal(dump.includes(secret.slice(8, 30)), false, 'no part of the secret beyond the displayed prefix is in the dump')

  const logs = server.lines.join('\n') + server.stderr()
  assert.ok(server.lines.length > 0)
  assert.equal(logs.includes(secret.slice(8)), false, 'the key is not in the logs')
  assert.equal(logs.includes(Buffer.from(`user:${key}`).toString('base64')), false, 'a Basic credential is not in the logs')
})
