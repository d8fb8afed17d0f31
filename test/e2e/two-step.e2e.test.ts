import { spawn } from 'node:child_process'
import { once } from 'node:events'
import { existsSync } from 'node:fs'
import { describe, test, type TestContext } from 'node:test'
import assert from 'node:assert/strict'
import { Secret, TOTP } from 'otpauth'
import { chromium, type BrowserContext, type Page } from 'playwright-core'
import { tempDir } from '../helpers/build-app.js'
import { CLI_PATH, runCli } from '../helpers/spawn-cli.js'
import { startServer } from '../helpers/start-server.js'

/** Debian's chromium package: Playwright's own browser download does not work here. */
const CHROMIUM = '/usr/bin/chromium'
const CHROMIUM_ARGS = ['--headless', '--no-sandbox', '--disable-gpu', '--disable-background-networking', '--disable-component-update', '--disable-sync', '--no-first-run', '--disable-quic']
const PASSWORD = 'correct horse battery staple'
const EMAIL = 'operator-made@example.com'

function chromiumAvailable (): boolean {
  if (existsSync(CHROMIUM)) return true
  if (process.env.CI === 'true') throw new Error(`Chromium is required in CI but ${CHROMIUM} is missing: apt-get install -y chromium`)
  process.stderr.write(`\n*** ${CHROMIUM} is missing: the two-step verification browser test is SKIPPED (apt-get install -y chromium) ***\n\n`)
  return false
}

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

async function logIn (page: Page): Promise<void> {
  await page.goto('/portal/login')
  await page.getByLabel('Email').fill(EMAIL)
  await page.getByLabel('Password', { exact: true }).fill(PASSWORD)
  await page.getByRole('button', { name: 'Log in' }).click()
  await page.waitForURL('**/portal/login/code')
}

async function typeCode (page: Page, code: string): Promise<void> {
  await page.getByLabel('Code', { exact: true }).fill(code)
  await page.getByRole('button', { name: 'Log in' }).click()
}

async function logOut (page: Page): Promise<void> {
  await page.getByRole('button', { name: 'Log out' }).click()
  await page.waitForURL('**/portal/login?logged_out=1')
}

async function open (t: TestContext): Promise<{ page: Page, consoleErrors: string[], databaseUrl: string }> {
  // Registered first so that it runs first: the browser's keep-alive connections would hold up the server's close.
  let browser: BrowserContext | undefined
  t.after(() => browser?.close())
  const server = await startServer(t)
  const context = browser = await chromium.launchPersistentContext(tempDir(t), { executablePath: CHROMIUM, headless: true, args: CHROMIUM_ARGS, baseURL: server.baseUrl })
  const page = context.pages()[0] ?? await context.newPage()
  const consoleErrors: string[] = []
  page.on('console', (message) => { if (message.type() === 'error') consoleErrors.push(message.text()) })
  page.on('pageerror', (error) => consoleErrors.push(error.message))
  return { page, consoleErrors, databaseUrl: server.databaseUrl }
}

describe('two-step verification in Chromium', { skip: !chromiumAvailable() }, () => {
  test('an operator-made account turns TOTP on from the QR page, logs in with password and code, and uses a recovery code once', { timeout: 120_000 }, async (t) => {
    const { page, consoleErrors, databaseUrl } = await open(t)
    await operatorAccount(databaseUrl)
    await page.goto('/portal/login')
    await page.getByLabel('Email').fill(EMAIL)
    await page.getByLabel('Password', { exact: true }).fill(PASSWORD)
    await page.getByRole('button', { name: 'Log in' }).click()
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
