import { test } from 'node:test'
import assert from 'node:assert/strict'
import { join } from 'node:path'
import { openSqliteStore } from '../../src/storage/sqlite/sqlite-store.js'
import { tempDir } from '../helpers/build-app.js'
import { cliEnv, runCli, type CliResult } from '../helpers/spawn-cli.js'

const show = (result: CliResult): string => `exit ${String(result.code)}\nstdout:\n${result.stdout}\nstderr:\n${result.stderr}`

test('keys create --test makes a test key, keys list --json and keys roll say the mode, sandbox reset empties and reseeds the sandbox, audited', async (t) => {
  const dbPath = join(tempDir(t), 'animal-store.sqlite')
  const env = cliEnv(dbPath)
  const ok = async (args: string[]): Promise<CliResult> => {
    const result = await runCli(args, env)
    assert.equal(result.code, 0, show(result))
    return result
  }
  await ok(['accounts', 'create', '--email', 'dev@example.com'])
  const created = await ok(['keys', 'create', '--email', 'dev@example.com', '--label', 'ci', '--test'])
  const lines = created.stdout.trim().split('\n')
  assert.match(lines.at(-1) ?? '', /^ask_test_[0-9A-Za-z]{38}$/, show(created))
  assert.ok(lines.some((line) => line.startsWith('Mode: test')), show(created))
  await ok(['keys', 'create', '--email', 'dev@example.com', '--label', 'prod'])
  const listed = JSON.parse((await ok(['keys', 'list', '--email', 'dev@example.com', '--json'])).stdout) as Array<{ id: string, label: string, mode: string, prefix: string }>
  assert.deepEqual(listed.map(({ label, mode }) => ({ label, mode })), [{ label: 'ci', mode: 'test' }, { label: 'prod', mode: 'live' }])
  assert.match(listed[0]?.prefix ?? '', /^ask_test_[0-9A-Za-z]{8}$/)
  const rolled = await ok(['keys', 'roll', listed[1]?.id ?? '', '--test', '--grace', '0'])
  assert.match(rolled.stdout.trim().split('\n').at(-1) ?? '', /^ask_test_/, 'a live key rolled with --test is replaced by a test key')
  assert.equal((await runCli(['keys', 'roll', listed[0]?.id ?? '', '--test', '--live'], env)).code, 1)

  const store = openSqliteStore(dbPath)
  t.after(() => store.close())
  const account = await store.accounts.findByEmail('dev@example.com')
  assert.ok(account)
  assert.equal((await store.sandbox.listPage(account.id, { status: undefined, afterId: 0, limit: 100 })).pets.length, 20, 'a test key comes with a seeded sandbox')
  await store.sandbox.insert(account.id, { name: 'Extra', categoryId: 1 }, undefined, { maxPets: 100, seed: [] })
  assert.equal((await store.sandbox.listPage(account.id, { status: undefined, afterId: 0, limit: 100 })).pets.length, 21)

  const reset = await ok(['sandbox', 'reset', '--email', 'dev@example.com'])
  assert.match(reset.stdout, /Reset the sandbox of dev@example\.com/)
  assert.deepEqual((await store.sandbox.listPage(account.id, { status: undefined, afterId: 0, limit: 100 })).pets.map((pet) => pet.id), Array.from({ length: 20 }, (_, index) => index + 1))
  const [event] = await store.audit.page(account.id, { limit: 1 })
  assert.deepEqual({ event: event?.event, actor: event?.actor }, { event: 'sandbox_reset', actor: 'cli' })
  const unknown = await runCli(['sandbox', 'reset', '--email', 'nobody@example.com'], env)
  assert.equal(unknown.code, 1, show(unknown))
  assert.match(unknown.stderr, /no account has the email nobody@example\.com/)
})
