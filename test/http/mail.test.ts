import assert from 'node:assert/strict'
import { describe, test, type TestContext } from 'node:test'
import { pino } from 'pino'
import { RESET_SENT } from '../../src/portal/views/mail-links.js'
import { remindExpiringKeys } from '../../src/services/account-mail.js'
import { createAccount, createApiKey } from '../../src/services/accounts.js'
import { mailLinksOf, message } from '../../src/services/mail-messages.js'
import { MailSender } from '../../src/services/mail-sender.js'
import { openPostgresStore } from '../../src/storage/postgres/postgres-store.js'
import { openSqliteStore } from '../../src/storage/sqlite/sqlite-store.js'
import type { Store } from '../../src/storage/store.js'
import { buildTestApp, TEST_ENGINE, type TestApp } from '../helpers/build-app.js'
import { eventually } from '../helpers/eventually.js'
import { csrfTokenOf, messageOf, PortalClient, TEST_PASSWORD } from '../helpers/portal-client.js'
import { linkPath, SmtpSink, type SinkMessage } from '../helpers/smtp-sink.js'

const PASSWORD = TEST_PASSWORD
const NEW_PASSWORD = 'a different long passphrase'
const silent = pino({ level: 'silent' })

/** A sender as `serve` runs one, polling often so that tests wait little. */
function startSender (t: TestContext, store: Store, smtpUrl: string, giveUpAfterMs = 86_400_000): MailSender {
  const sender = new MailSender(store.mailOutbox, { smtpUrl, from: 'Animal Store <no-reply@example.com>', giveUpAfterMs, log: silent, pollMs: 25 })
  sender.start()
  t.after(() => sender.close())
  return sender
}

/** A second store on the same database: what a second instance of the service opens. */
function secondStore (t: TestContext, app: TestApp): Store {
  const store = TEST_ENGINE === 'postgres' ? openPostgresStore(app.databaseUrl, { poolSize: 4, onError: () => {} }) : openSqliteStore(app.dbPath)
  t.after(() => store.close())
  return store
}

async function mailTo (sink: SmtpSink, recipient: string, subject: RegExp): Promise<SinkMessage> {
  return await eventually(() => {
    const found = sink.to(recipient).filter((mail) => subject.test(mail.subject))
    assert.equal(found.length, 1, `one message "${String(subject)}" to ${recipient}; got ${sink.to(recipient).map((mail) => mail.subject).join(' | ')}`)
    return found[0] as SinkMessage
  }, { timeout: 10_000 })
}

/** A message holds its one link and nothing else to act on: no key, no password, and the same link in both parts. */
function assertOnlyTheLink (mail: SinkMessage, path: RegExp): void {
  assert.equal(mail.links.length, 1, mail.text)
  assert.match(linkPath(mail), path)
  const hrefs = [...mail.html.matchAll(/href="([^"]+)"/g)].map((match) => (match[1] ?? '').replaceAll('&amp;', '&'))
  assert.deepEqual(hrefs, mail.links, 'the HTML part links to the same one place')
  assert.doesNotMatch(mail.text + mail.html, /ask_[0-9A-Za-z]{10,}/, 'no API key')
  assert.doesNotMatch(mail.text + mail.html, new RegExp(`${PASSWORD}|${NEW_PASSWORD}`), 'no password')
}

describe(`mail (${TEST_ENGINE})`, () => {
  test('sign-up sends a verification link; until it is followed the account can log in but not generate keys; the link works once', async (t) => {
    const sink = await SmtpSink.start(t)
    const { app, store } = await buildTestApp(t)
    startSender(t, store, sink.url)
    const browser = new PortalClient(app)
    assert.equal((await browser.signUp('Vera@Example.com', PASSWORD, { verify: false })).statusCode, 303)

    const keys = await browser.get('/portal/keys')
    assert.match(keys.body, /Verify your email address/)
    assert.match(keys.body, /action="\/portal\/keys\/verification"/)
    assert.doesNotMatch(keys.body, /Generate a key/)
    const refused = await browser.post('/portal/keys', { _csrf: csrfTokenOf(keys.body), label: 'early', scopes: ['animals:read'], expires_in: 'never' })
    assert.equal(refused.statusCode, 403, refused.body)
    assert.match(refused.body, /Follow the link we mailed to vera@example\.com/)

    const mail = await mailTo(sink, 'vera@example.com', /^Verify your email address/)
    assert.match(mail.from, /no-reply@example\.com/)
    assertOnlyTheLink(mail, /^\/portal\/verify\?token=[A-Za-z0-9_-]{43}$/)
    const tokenText = new URL(mail.links[0] as string).searchParams.get('token') ?? ''
    const stored = await store.accountTokens.find(tokenText)
    assert.equal(stored, undefined, 'the token itself is not what the database keeps')

    const verified = await browser.get(linkPath(mail))
    assert.equal(verified.statusCode, 200, verified.body)
    assert.match(verified.body, /Email address verified/)
    const { key } = await browser.generateKey('after verification')
    assert.match(key, /^ask_/)
    const notice = await mailTo(sink, 'vera@example.com', /new API key was created/)
    assertOnlyTheLink(notice, /^\/portal\/keys$/)

    const again = await browser.get(linkPath(mail))
    assert.equal(again.statusCode, 410, again.body)
    assert.match(again.body, /used already/)
    const tampered = linkPath(mail).replace(/token=(.)/, (_all, first: string) => `token=${first === 'A' ? 'B' : 'A'}`)
    assert.equal((await browser.get(tampered)).statusCode, 410)
    for (const bad of ['/portal/verify', '/portal/verify?token=short', `/portal/verify?token=${'A'.repeat(5000)}`, '/portal/verify?token=%00%01', '/portal/verify?token=a&token=b']) {
      const answer = await browser.get(bad)
      assert.equal(answer.statusCode, 400, `${bad}: ${answer.body.slice(0, 200)}`)
      assert.match(answer.body, /not complete or was changed/)
    }
    const events = (await store.audit.page((await store.accounts.findByEmail('vera@example.com'))?.id ?? 0, { limit: 20 })).map((event) => event.event)
    assert.ok(events.includes('verification_sent') && events.includes('email_verified') && events.includes('key_created'), events.join(' '))
  })

  test('the resend is throttled per account, and only the newest link works', async (t) => {
    const { app, store } = await buildTestApp(t)
    const browser = new PortalClient(app)
    await browser.signUp('resend@example.com', PASSWORD, { verify: false })
    const statuses: number[] = []
    for (let index = 0; index < 4; index++) {
      const page = await browser.get('/portal/keys')
      statuses.push((await browser.post('/portal/keys/verification', { _csrf: csrfTokenOf(page.body) })).statusCode)
    }
    assert.deepEqual(statuses, [303, 303, 303, 429])
    const links = (await store.mailOutbox.list({ pendingOnly: false, limit: 10 })).filter((mail) => mail.kind === 'verify_email').map((mail) => new URL(mail.link))
    assert.equal(links.length, 4, 'the sign-up link and three more')
    const [newest, older] = links
    assert.equal((await browser.get(`${older?.pathname}${older?.search}`)).statusCode, 410, 'an older link ended when a new one was sent')
    assert.equal((await browser.get(`${newest?.pathname}${newest?.search}`)).statusCode, 200)
  })

  test('accounts made by an operator and accounts that existed before count as verified', async (t) => {
    const { store } = await buildTestApp(t)
    const account = await createAccount(store, { email: 'ops-made@example.com' })
    assert.notEqual(account.emailVerifiedAt, null)
    assert.notEqual((await store.accounts.findByEmail('test@example.com'))?.emailVerifiedAt, null)
  })

  test('forgot password: the same answer for any email; the mailed link sets a new password once, ends every session, and is audited', async (t) => {
    const sink = await SmtpSink.start(t)
    const { app, store } = await buildTestApp(t)
    startSender(t, store, sink.url)
    const owner = new PortalClient(app, '192.0.2.20')
    await owner.signedUpAs(store, 'reset@example.com')
    assert.equal((await owner.get('/portal/keys')).statusCode, 200)

    const asker = new PortalClient(app, '192.0.2.21')
    const known = await asker.submit('/portal/forgot', '/portal/forgot', { email: 'reset@example.com' })
    const unknown = await asker.submit('/portal/forgot', '/portal/forgot', { email: 'nobody@example.com' })
    assert.equal(known.statusCode, 200)
    assert.equal(unknown.statusCode, 200)
    assert.equal(messageOf(known.body), RESET_SENT)
    assert.equal(known.body.replaceAll('reset@example.com', 'EMAIL').replace(/value="[^"]{20,}"/, ''), unknown.body.replaceAll('nobody@example.com', 'EMAIL').replace(/value="[^"]{20,}"/, ''))

    const mail = await mailTo(sink, 'reset@example.com', /^Reset your Animal Store password/)
    assertOnlyTheLink(mail, /^\/portal\/reset\?token=[A-Za-z0-9_-]{43}$/)
    assert.equal((await store.mailOutbox.list({ pendingOnly: false, limit: 100 })).filter((row) => row.recipient === 'nobody@example.com').length, 0, 'nothing is written for an unknown email')

    const form = await asker.get(linkPath(mail))
    assert.equal(form.statusCode, 200, form.body)
    const token = /name="token" value="([^"]+)"/.exec(form.body)?.[1] ?? ''
    const short = await asker.post('/portal/reset', { _csrf: csrfTokenOf(form.body), token, password: 'short' })
    assert.equal(short.statusCode, 400)
    const set = await asker.post('/portal/reset', { _csrf: csrfTokenOf(short.body), token, password: NEW_PASSWORD })
    assert.equal(set.statusCode, 303, set.body)
    assert.equal(set.headers.location, '/portal/login?reset=1')

    const ended = await owner.get('/portal/keys')
    assert.equal(ended.statusCode, 303, 'the session open before the reset has ended')
    assert.equal((await new PortalClient(app, '192.0.2.22').logIn('reset@example.com', PASSWORD)).statusCode, 401)
    assert.equal((await new PortalClient(app, '192.0.2.23').logIn('reset@example.com', NEW_PASSWORD)).statusCode, 303)

    const reused = await asker.get(linkPath(mail))
    assert.equal(reused.statusCode, 410)
    const replay = await asker.post('/portal/reset', { _csrf: csrfTokenOf((await asker.get('/portal/forgot')).body), token, password: 'yet another long passphrase' })
    assert.equal(replay.statusCode, 410, 'a used link sets nothing')
    const notice = await mailTo(sink, 'reset@example.com', /password was reset/)
    assertOnlyTheLink(notice, /^\/portal\/forgot$/)
    const account = await store.accounts.findByEmail('reset@example.com')
    const events = (await store.audit.page(account?.id ?? 0, { limit: 20 })).map((event) => event.event)
    assert.ok(events.includes('password_reset_requested') && events.includes('password_reset'), events.join(' '))
  })

  test('forgot password is throttled per email and per address, alike for unknown emails; bad input gets 400', async (t) => {
    const { app } = await buildTestApp(t)
    const statuses = async (email: string, from: (n: number) => string, times: number): Promise<number[]> => {
      const result: number[] = []
      for (let index = 0; index < times; index++) result.push((await new PortalClient(app, from(index)).submit('/portal/forgot', '/portal/forgot', { email })).statusCode)
      return result
    }
    assert.deepEqual(await statuses('test@example.com', (n) => `198.51.100.${n + 1}`, 4), [200, 200, 200, 429])
    assert.deepEqual(await statuses('ghost@example.com', (n) => `198.51.100.${n + 1}`, 4), [200, 200, 200, 429], 'an unknown email is throttled alike')
    const one = new PortalClient(app, '203.0.113.50')
    const fromOne: number[] = []
    for (let index = 0; index < 11; index++) fromOne.push((await one.submit('/portal/forgot', '/portal/forgot', { email: `n${index}@example.com` })).statusCode)
    assert.deepEqual(fromOne, [...Array(10).fill(200), 429])
    for (const email of ['a\u0000b@example.com', 'x'.repeat(400) + '@example.com', 'not an email']) {
      const answer = await new PortalClient(app, '203.0.113.60').submit('/portal/forgot', '/portal/forgot', { email })
      assert.equal(answer.statusCode, 400, email.slice(0, 20))
    }
    const noCsrf = await new PortalClient(app, '203.0.113.61').post('/portal/forgot', { email: 'test@example.com' })
    assert.equal(noCsrf.statusCode, 403)
    const badLink = await new PortalClient(app, '203.0.113.62').post('/portal/reset', { _csrf: 'x', token: 'x', password: NEW_PASSWORD })
    assert.equal(badLink.statusCode, 403)
  })

  test('SMTP down, then up: every message is delivered once', async (t) => {
    const sink = await SmtpSink.start(t)
    const port = sink.port
    await sink.stop()
    const { store } = await buildTestApp(t)
    const ids: number[] = []
    for (let index = 0; index < 5; index++) ids.push(await store.mailOutbox.enqueue(testMail(`down${index}@example.com`)))
    startSender(t, store, `smtp://127.0.0.1:${port}`)
    await eventually(async () => {
      const pending = (await store.mailOutbox.list({ pendingOnly: true, limit: 10 })).filter((mail) => mail.recipient.startsWith('down'))
      assert.equal(pending.length, 5)
      assert.ok(pending.every((mail) => mail.attempts >= 1 && mail.lastError !== null), 'every message was tried and failed')
    }, { timeout: 10_000 })
    await sink.listen(port)
    await eventually(async () => { assert.equal((await store.mailOutbox.list({ pendingOnly: true, limit: 10 })).length, 0) }, { timeout: 15_000 })
    const down = sink.messages.filter((mail) => mail.to.startsWith('down'))
    assert.equal(down.length, 5)
    assert.equal(new Set(down.map((mail) => mail.messageId)).size, 5, 'no message twice')
  })

  test('a message never sent within the give-up time is marked failed', async (t) => {
    const sink = await SmtpSink.start(t)
    const port = sink.port
    await sink.stop()
    const { store } = await buildTestApp(t)
    await store.mailOutbox.enqueue(testMail('never@example.com'))
    startSender(t, store, `smtp://127.0.0.1:${port}`, 1000)
    const [failed] = await eventually(async () => {
      const rows = await store.mailOutbox.list({ pendingOnly: false, limit: 1 })
      assert.equal(rows[0]?.status, 'failed')
      return rows
    }, { timeout: 10_000 })
    assert.ok((failed?.attempts ?? 0) >= 1)
    assert.match(failed?.lastError ?? '', /ECONNREFUSED|connect/i)
  })

  test('two instances share one outbox: no message is sent twice', async (t) => {
    const sink = await SmtpSink.start(t)
    const first = await buildTestApp(t)
    const other = secondStore(t, first)
    for (let index = 0; index < 40; index++) await (index % 2 === 0 ? first.store : other).mailOutbox.enqueue(testMail(`shared${index}@example.com`))
    startSender(t, first.store, sink.url)
    startSender(t, other, sink.url)
    // Besides the key-created notice of the test app's own account.
    const shared = (): SinkMessage[] => sink.messages.filter((mail) => mail.to.startsWith('shared'))
    await eventually(async () => { assert.equal((await first.store.mailOutbox.list({ pendingOnly: true, limit: 50 })).length, 0) }, { timeout: 20_000 })
    assert.equal(shared().length, 40)
    assert.equal(new Set(shared().map((mail) => mail.messageId)).size, 40)
    assert.equal(new Set(shared().map((mail) => mail.to)).size, 40)
  })

  test('a key that expires in 7 days gets one reminder, however many instances look', async (t) => {
    const first = await buildTestApp(t)
    const other = secondStore(t, first)
    const DAY = 86_400_000
    await createAccount(first.store, { email: 'remind@example.com' })
    const { row } = await createApiKey(first.store, { email: 'remind@example.com', label: 'cron', expiresAt: new Date(Date.now() + 30 * DAY) })
    await createApiKey(first.store, { email: 'remind@example.com', label: 'short-lived', expiresAt: new Date(Date.now() + 2 * DAY) })
    const links = mailLinksOf({ publicBaseUrl: undefined, port: 8080 })
    assert.equal(await remindExpiringKeys(first.store, links), 0, 'not yet within 7 days; a key that lives under 7 days is never reminded')
    const later = new Date(Date.now() + 24 * DAY)
    const written = await Promise.all([remindExpiringKeys(first.store, links, later), remindExpiringKeys(other, links, later), remindExpiringKeys(first.store, links, later)])
    assert.equal(written.reduce((sum, count) => sum + count, 0), 1)
    const reminders = (await first.store.mailOutbox.list({ pendingOnly: false, limit: 20 })).filter((mail) => mail.kind === 'key_expiring')
    assert.equal(reminders.length, 1)
    assert.match(reminders[0]?.text ?? '', new RegExp(row.id))
    const account = await first.store.accounts.findByEmail('remind@example.com')
    assert.equal((await first.store.audit.page(account?.id ?? 0, { limit: 20 })).filter((event) => event.event === 'key_expiry_reminded').length, 1)
  })
})

function testMail (recipient: string) {
  return message({ recipient, kind: 'test', subject: `Test for ${recipient}`, lines: ['A test message.'], action: 'Open', link: 'http://localhost:8080/portal/keys', footer: 'Nothing to do.' })
}
