import assert from 'node:assert/strict'
import { existsSync } from 'node:fs'
import { describe, test } from 'node:test'
import { chromium, type BrowserContext } from 'playwright-core'
import { pino } from 'pino'
import { MailSender } from '../../src/services/mail-sender.js'
import { tempDir } from '../helpers/build-app.js'
import { eventually } from '../helpers/eventually.js'
import { linkPath, SmtpSink, type SinkMessage } from '../helpers/smtp-sink.js'
import { startServer } from '../helpers/start-server.js'

const CHROMIUM = '/usr/bin/chromium'
const CHROMIUM_ARGS = ['--headless', '--no-sandbox', '--disable-gpu', '--disable-background-networking', '--disable-component-update', '--disable-sync', '--no-first-run', '--disable-quic']
const PASSWORD = 'correct horse battery staple'
const NEW_PASSWORD = 'a brand new long passphrase'

function chromiumAvailable (): boolean {
  if (existsSync(CHROMIUM)) return true
  if (process.env.CI === 'true') throw new Error(`Chromium is required in CI but ${CHROMIUM} is missing: apt-get install -y chromium`)
  process.stderr.write(`\n*** ${CHROMIUM} is missing: the mail end-to-end test is SKIPPED (apt-get install -y chromium) ***\n\n`)
  return false
}

describe('developer portal mail in Chromium', { skip: !chromiumAvailable() }, () => {
  test('sign up, verify through the mailed link, generate a key, forget the password, reset it through the mailed link, log in', { timeout: 120_000 }, async (t) => {
    let browser: BrowserContext | undefined
    t.after(() => browser?.close())
    const sink = await SmtpSink.start(t)
    const server = await startServer(t)
    const sender = new MailSender(server.store.mailOutbox, { smtpUrl: sink.url, from: 'Animal Store <no-reply@example.com>', giveUpAfterMs: 60_000, log: pino({ level: 'silent' }), pollMs: 25 })
    sender.start()
    t.after(() => sender.close())
    const context = browser = await chromium.launchPersistentContext(tempDir(t), { executablePath: CHROMIUM, headless: true, args: CHROMIUM_ARGS, baseURL: server.baseUrl })
    const page = context.pages()[0] ?? await context.newPage()
    const consoleErrors: string[] = []
    page.on('console', (message) => { if (message.type() === 'error') consoleErrors.push(message.text()) })
    const mailTo = async (subject: RegExp): Promise<SinkMessage> => await eventually(() => {
      const found = sink.to('mia@example.com').find((mail) => subject.test(mail.subject))
      assert.ok(found, `a message "${String(subject)}"`)
      return found
    }, { timeout: 10_000 })

    await page.goto('/portal/signup')
    await page.getByLabel('Email').fill('mia@example.com')
    await page.getByLabel('Password', { exact: true }).fill(PASSWORD)
    await page.getByRole('button', { name: 'Create account' }).click()
    assert.match(await page.locator('main').innerText(), /Check your email[\s\S]*We sent a link to mia@example\.com/)
    // Logged in before following the link: the keys page says why no key can be generated yet.
    await page.locator('main').getByRole('link', { name: 'Log in' }).click()
    await page.getByLabel('Email').fill('mia@example.com')
    await page.getByLabel('Password', { exact: true }).fill(PASSWORD)
    await page.getByRole('button', { name: 'Log in' }).click()
    await page.waitForURL('**/portal/keys')
    assert.match(await page.locator('#verify-first').innerText(), /Before you can generate or roll keys, follow the link we mailed to mia@example\.com/)
    assert.equal(await page.getByRole('button', { name: 'Generate key' }).count(), 0)

    await page.goto(linkPath(await mailTo(/^Verify your email address/)))
    assert.match(await page.locator('h1').innerText(), /Email address verified/)
    await page.getByRole('link', { name: 'Go to your keys' }).click()
    await page.getByLabel('Label').fill('laptop')
    await page.getByRole('button', { name: 'Generate key' }).click()
    await page.locator('#new-key-value').waitFor()
    assert.match(await page.locator('#new-key-value').innerText(), /^ask_[0-9A-Za-z]{38}$/)
    await mailTo(/new API key was created/)

    await page.getByRole('button', { name: 'Log out' }).click()
    await page.waitForURL('**/portal/login?logged_out=1')
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

    await page.getByLabel('Email').fill('mia@example.com')
    await page.getByLabel('Password', { exact: true }).fill(NEW_PASSWORD)
    await page.getByRole('button', { name: 'Log in' }).click()
    await page.waitForURL('**/portal/keys')
    assert.match(await page.locator('table.keys').first().innerText(), /laptop/)
    assert.deepEqual(consoleErrors, [], 'no console errors, no CSP violations')
  })
})
