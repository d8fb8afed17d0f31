import { spawn } from 'node:child_process'
import { once } from 'node:events'
import { describe, test } from 'node:test'
import assert from 'node:assert/strict'
import { Secret, TOTP } from 'otpauth'
import type { Page } from 'playwright-core'
import { chromiumAvailable, chromiumForSuite, logOut, openSession, submitLogIn } from '../helpers/chromium.js'
import { CLI_PATH, runCli } from '../helpers/spawn-cli.js'

const PASSWORD = 'correct horse battery staple'
const EMAIL = 'operator-made@example.com'

/** The account an operator makes: `accounts create`, then `accounts set-password` reading the password from stdin. */
async function operatorAccount (databaseUrl: string): Promise<void> {
  const env = { PATH: process.env.PATH ?? '', DATABASE_URL: databaseUrl }
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

describe('two-step verification in Chromium', { skip: !chromiumAvailable('the two-step verification browser test is') }, () => {
  const chromium = chromiumForSuite()

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
