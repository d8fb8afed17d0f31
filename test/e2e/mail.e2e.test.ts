import assert from 'node:assert/strict'
import { describe, test } from 'node:test'
import { pino } from 'pino'
import { MailSender } from '../../src/services/mail-sender.js'
import { chromiumAvailable, chromiumForSuite, generateKey, logOut, openSession, signUp, submitLogIn } from '../helpers/chromium.js'
import { eventually } from '../helpers/eventually.js'
import { linkPath, SmtpSink, type SinkMessage } from '../helpers/smtp-sink.js'

const PASSWORD = 'correct horse battery staple'
const NEW_PASSWORD = 'a brand new long passphrase'

describe('developer portal mail in Chromium', { skip: !chromiumAvailable('the mail end-to-end test is') }, () => {
  const chromium = chromiumForSuite()

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
