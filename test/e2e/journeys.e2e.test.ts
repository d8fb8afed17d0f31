// The developer portal's journeys in Chromium beyond its keys page (portal.e2e.test.ts): mail, test mode and
// two-step verification. One file and one browser: each test pays for its own server and browser context only.
import { spawn } from 'node:child_process'
import { once } from 'node:events'
import { describe, test } from 'node:test'
import assert from 'node:assert/strict'
import { Secret, TOTP } from 'otpauth'
import type { Page } from 'playwright-core'
import { pino } from 'pino'
import { MailSender } from '../../src/services/mail-sender.js'
import { chromiumAvailable, chromiumForSuite, generateKey, logOut, openSession, signUp, submitLogIn, verifyAndLogIn } from '../helpers/chromium.js'
import { eventually } from '../helpers/eventually.js'
import { TEST_HASH_COST_ENV } from '../helpers/password-cost.js'
import { linkPath, SmtpSink, type SinkMessage } from '../helpers/smtp-sink.js'
import { CLI_PATH, runCli } from '../helpers/spawn-cli.js'

const PASSWORD = 'correct horse battery staple'
const NEW_PASSWORD = 'a brand new long passphrase'

/** A key from the keys page loaded anew, as by someone who comes back to it for another key. */
async function generateKeyIn (page: Page, label: string, mode: 'Live' | 'Test'): Promise<string> {
  await page.goto('/portal/keys')
  return await generateKey(page, label, { mode })
}

interface Pet { id: number, name: string }

async function call (baseUrl: string, key: string, path: string, body?: object): Promise<{ status: number, json: unknown }> {
  const response = await fetch(`${baseUrl}/v1${path}`, {
    method: body === undefined ? 'GET' : 'POST',
    headers: { authorization: `Bearer ${key}`, 'content-type': 'application/json' },
    body: body === undefined ? undefined : JSON.stringify(body)
  })
  return { status: response.status, json: await response.json() }
}

const EMAIL = 'operator-made@example.com'

/** The account an operator makes: `accounts create`, then `accounts set-password` reading the password from stdin. */
async function operatorAccount (databaseUrl: string): Promise<void> {
  const env = { PATH: process.env.PATH ?? '', DATABASE_URL: databaseUrl, ...TEST_HASH_COST_ENV }
  const created = await runCli(['accounts', 'create', '--email', EMAIL], env)
  assert.equal(created.code, 0, created.stderr)
  const child = spawn(process.execPath, [CLI_PATH, 'accounts', 'set-password', '--email', EMAIL], { env, stdio: ['pipe', 'ignore', 'pipe'] })
  let stderr = ''
  child.stderr.setEncoding('utf8').on('data', (chunk: string) => { stderr += chunk })
  child.stdin.end(`${PASSWORD}\n`)
  const [code] = await once(child, 'close') as [number | null]
  assert.equal(code, 0, stderr)
}

/** The code the app shows now, or the next step's when the current step's was used (the next step is accepted already, for clock drift). */
function freshCode (secret: string, after: number): { code: string, step: number } {
  const totp = new TOTP({ secret: Secret.fromBase32(secret), digits: 6, period: 30, algorithm: 'SHA1' })
  let step = totp.counter()
  if (step <= after) step = after + 1
  return { code: totp.generate({ timestamp: step * 30_000 + 1000 }), step }
}

/** The first step of a log-in, which asks for the code next. */
async function logIn (page: Page): Promise<void> {
  await page.goto('/portal/login')
  await submitLogIn(page, EMAIL, PASSWORD)
  await page.waitForURL('**/portal/login/code')
}

async function typeCode (page: Page, code: string): Promise<void> {
  await page.getByLabel('Code', { exact: true }).fill(code)
  await page.getByRole('button', { name: 'Log in' }).click()
}

describe('developer portal journeys in Chromium', { skip: !chromiumAvailable('the browser end-to-end tests of mail, test mode and two-step verification are') }, () => {
  const chromium = chromiumForSuite()

  describe('mail', () => {
    test('sign up, verify through the mailed link, generate a key, forget the password, reset it through the mailed link, log in', { timeout: 120_000 }, async (t) => {
      const { server, page, consoleErrors } = await openSession(t, chromium())
      const sink = await SmtpSink.start(t)
      const sender = new MailSender(server.store.mailOutbox, { smtpUrl: sink.url, from: 'Animal Store <no-reply@example.com>', giveUpAfterMs: 60_000, log: pino({ level: 'silent' }), pollMs: 25 })
      sender.start()
      t.after(() => sender.close())
      const mailTo = async (subject: RegExp): Promise<SinkMessage> => await eventually(() => {
        const found = sink.to('mia@example.com').find((mail) => subject.test(mail.subject))
        assert.ok(found, `a message "${String(subject)}"`)
        return found
      }, { timeout: 10_000 })

      await signUp(page, 'mia@example.com', PASSWORD)
      assert.match(await page.locator('main').innerText(), /Check your email[\s\S]*We sent a link to mia@example\.com/)
      // Logged in before following the link: the keys page says why no key can be generated yet.
      await page.locator('main').getByRole('link', { name: 'Log in' }).click()
      await submitLogIn(page, 'mia@example.com', PASSWORD)
      await page.waitForURL('**/portal/keys')
      assert.match(await page.locator('#verify-first').innerText(), /Before you can generate or roll keys, follow the link we mailed to mia@example\.com/)
      assert.equal(await page.getByRole('button', { name: 'Generate key' }).count(), 0)

      await page.goto(linkPath(await mailTo(/^Verify your email address/)))
      assert.match(await page.locator('h1').innerText(), /Email address verified/)
      await page.getByRole('link', { name: 'Go to your keys' }).click()
      assert.match(await generateKey(page, 'laptop'), /^ask_[0-9A-Za-z]{38}$/)
      await mailTo(/new API key was created/)

      await logOut(page)
      await page.getByRole('link', { name: 'Forgot your password?' }).click()
      await page.getByLabel('Email').fill('mia@example.com')
      await page.getByRole('button', { name: 'Send the link' }).click()
      assert.match(await page.locator('p.message.notice').innerText(), /If an account has this email address, a link/)

      await page.goto(linkPath(await mailTo(/^Reset your Animal Store password/)))
      await page.getByLabel('New password').fill(NEW_PASSWORD)
      await page.getByRole('button', { name: 'Set the new password' }).click()
      await page.waitForURL('**/portal/login?reset=1')
      assert.match(await page.locator('p.message.notice').innerText(), /Your new password is set/)
      await mailTo(/password was reset/)

      await submitLogIn(page, 'mia@example.com', NEW_PASSWORD)
      await page.waitForURL('**/portal/keys')
      assert.match(await page.locator('table.keys').first().innerText(), /laptop/)
      assert.deepEqual(consoleErrors, [], 'no console errors, no CSP violations')
    })
  })

  describe('test mode', () => {
    test('generate a test key, create an animal with it, see it only in test mode, reset, see the seeded catalogue again', { timeout: 120_000 }, async (t) => {
      const { server, page, consoleErrors } = await openSession(t, chromium())
      await signUp(page, 'tester@example.com', PASSWORD)
      // Keys need a verified email.
      await verifyAndLogIn(page, server, 'tester@example.com', PASSWORD)

      const testKey = await generateKeyIn(page, 'staging', 'Test')
      assert.match(testKey, /^ask_test_[0-9A-Za-z]{38}$/)
      assert.match(await page.locator('#new-key-terms').innerText(), /Mode\s+Test/)
      assert.match(await page.locator('#snippet').innerText(), /ask_test_/)
      const liveKey = await generateKeyIn(page, 'production', 'Live')
      assert.match(liveKey, /^ask_[0-9A-Za-z]{38}$/)
      const modes = await page.locator('table.keys').first().locator('td[data-label="Mode"]').allInnerTexts()
      assert.deepEqual(modes.map((text) => text.trim()), ['Test', 'Live'])

      const seeded = (await call(server.baseUrl, testKey, '/pets?limit=100')).json as Pet[]
      assert.equal(seeded.length, 20)
      const created = await call(server.baseUrl, testKey, '/pets', { name: 'Browser Rex', categoryId: 1, status: 'available' })
      assert.equal(created.status, 201)
      const id = (created.json as Pet).id
      assert.equal(id, 21)
      assert.ok(((await call(server.baseUrl, testKey, '/pets?limit=100')).json as Pet[]).some((pet) => pet.name === 'Browser Rex'), 'seen with the test key')
      assert.ok(!((await call(server.baseUrl, liveKey, '/pets?limit=100')).json as Pet[]).some((pet) => pet.name === 'Browser Rex'), 'never with the live key')
      assert.equal((await call(server.baseUrl, liveKey, `/pets/${id}`)).status, 404)

      await page.goto('/portal/keys')
      await page.getByRole('link', { name: 'Reset test data…' }).click()
      await page.waitForURL('**/portal/sandbox/reset')
      await page.getByRole('button', { name: 'Reset test data' }).click()
      await page.waitForURL('**/portal/keys?sandbox=reset')
      assert.match(await page.locator('p.message.notice').innerText(), /Your test data was reset/)

      assert.deepEqual((await call(server.baseUrl, testKey, '/pets?limit=100')).json, seeded, 'the seeded catalogue again')
      assert.equal((await call(server.baseUrl, testKey, `/pets/${id}`)).status, 404)
      await page.goto('/portal/events')
      assert.match(await page.locator('main').innerText(), /Test data reset/)
      assert.deepEqual(consoleErrors, [])
    })
  })

  describe('two-step verification', () => {
    test('an operator-made account turns TOTP on from the QR page, logs in with password and code, and uses a recovery code once', { timeout: 120_000 }, async (t) => {
      const { server, page, consoleErrors } = await openSession(t, chromium())
      await operatorAccount(server.databaseUrl)
      await page.goto('/portal/login')
      await submitLogIn(page, EMAIL, PASSWORD)
      await page.waitForURL('**/portal/keys')

      await page.getByRole('link', { name: 'Two-step verification' }).click()
      await page.getByRole('button', { name: 'Set up two-step verification' }).click()
      await page.waitForURL('**/portal/two-step/setup')
      const qr = page.getByRole('img', { name: 'QR code of your two-step verification secret' })
      assert.ok(await qr.locator('svg').isVisible(), 'the QR code is drawn')
      const box = await qr.locator('svg').boundingBox()
      assert.ok(box !== null && box.width > 100 && box.height > 100, 'the QR code has the size portal.css gives it')
      const secret = (await page.locator('#totp-secret').innerText()).replaceAll(' ', '')
      assert.match(secret, /^[A-Z2-7]{32}$/)
      const first = freshCode(secret, 0)
      await page.getByLabel('Code from the app').fill(first.code)
      await page.getByRole('button', { name: 'Turn on two-step verification' }).click()
      await page.waitForURL('**/portal/two-step/confirm')
      const recoveryCodes = await page.locator('#recovery-codes code').allInnerTexts()
      assert.equal(recoveryCodes.length, 10)
      await logOut(page)

      await logIn(page)
      const second = freshCode(secret, first.step)
      await typeCode(page, second.code)
      await page.waitForURL('**/portal/keys')
      await logOut(page)

      const [recovery = ''] = recoveryCodes
      await logIn(page)
      await typeCode(page, recovery)
      await page.waitForURL('**/portal/keys')
      await logOut(page)

      await logIn(page)
      await typeCode(page, recovery)
      assert.match(await page.locator('p.message.error').innerText(), /not correct, or it has been used already/)
      assert.match(page.url(), /\/portal\/login\/code$/)
      // The refused code's page comes with its 401, which Chromium reports as a failed load: expected.
      assert.deepEqual(consoleErrors.filter((message) => !/status of 401/.test(message)), [], 'no CSP violation or script error')
    })
  })
})
