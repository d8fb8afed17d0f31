import assert from 'node:assert/strict'
import { join } from 'node:path'
import { test } from 'node:test'
import { tempDir, TEST_ENGINE } from '../helpers/build-app.js'
import { eventually } from '../helpers/eventually.js'
import { createTestSchema } from '../helpers/postgres.js'
import { launchServer } from '../helpers/server-process.js'
import { SmtpSink } from '../helpers/smtp-sink.js'
import { runCli } from '../helpers/spawn-cli.js'

interface OutboxJson { id: number, status: string, to: string, attempts: number, lastError: string | null }

test(`a server killed with mail pending sends it after its restart, once (${TEST_ENGINE})`, { timeout: 90_000 }, async (t) => {
  const databaseUrl = TEST_ENGINE === 'postgres' ? await createTestSchema(t) : `sqlite:${join(tempDir(t), 'animal-store.sqlite')}`
  const cli = async (...args: string[]): Promise<string> => {
    const result = await runCli(args, { PATH: process.env.PATH ?? '', DATABASE_URL: databaseUrl, LOG_LEVEL: 'warn' })
    assert.equal(result.code, 0, result.stderr)
    return result.stdout
  }
  const outbox = async (): Promise<OutboxJson[]> => JSON.parse(await cli('mail', 'outbox', '--json')) as OutboxJson[]
  // The mail server is down at first: its port is known, nothing listens on it.
  const sink = await SmtpSink.start(t)
  const port = sink.port
  await sink.stop()
  const env = { DATABASE_URL: databaseUrl, SMTP_URL: `smtp://127.0.0.1:${port}`, MAIL_FROM: 'Animal Store <ops@example.com>', LOG_LEVEL: 'info' }

  const first = launchServer(t, env)
  await first.listening
  await cli('accounts', 'create', '--email', 'crash@example.com')
  await cli('keys', 'create', '--email', 'crash@example.com', '--label', 'before the crash')
  await cli('keys', 'create', '--email', 'crash@example.com', '--label', 'also before the crash')
  await eventually(async () => {
    const rows = await outbox()
    assert.equal(rows.length, 2)
    assert.ok(rows.every((row) => row.status === 'pending' && row.attempts >= 1 && row.lastError !== null), JSON.stringify(rows))
  }, { timeout: 20_000, interval: 200 })
  assert.ok(JSON.parse(await cli('mail', 'outbox', '--pending', '--json')).length === 2)
  first.child.kill('SIGKILL')
  await first.exited

  await sink.listen(port)
  const second = launchServer(t, env)
  await second.listening
  await eventually(async () => {
    assert.deepEqual((await outbox()).map((row) => row.status), ['sent', 'sent'])
  }, { timeout: 30_000, interval: 200 })
  assert.equal(sink.messages.length, 2)
  assert.equal(new Set(sink.messages.map((mail) => mail.messageId)).size, 2, 'each message once')
  assert.ok(sink.messages.every((mail) => /new API key was created/.test(mail.subject) && mail.to.includes('crash@example.com')))
  assert.match(await cli('mail', 'outbox'), /ID\s+STATUS\s+KIND\s+TO/)
  assert.equal(await cli('mail', 'outbox', '--pending'), 'No message is waiting to be sent.\n')
})
