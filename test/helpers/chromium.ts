import { existsSync } from 'node:fs'
import { after, before, type TestContext } from 'node:test'
import assert from 'node:assert/strict'
import { chromium, type Browser, type BrowserContext, type BrowserContextOptions, type Page } from 'playwright-core'
import { eventually } from './eventually.js'
import { linkPathOf } from './portal-client.js'
import { startServer, type TestServer } from './start-server.js'

/** Debian's chromium package: Playwright's own browser download does not work here. */
const CHROMIUM = '/usr/bin/chromium'
const CHROMIUM_ARGS = ['--headless', '--no-sandbox', '--disable-gpu', '--disable-background-networking', '--disable-component-update', '--disable-sync', '--no-first-run', '--disable-quic']

/** Whether the browser is installed; under CI=true a missing browser is a failure, elsewhere a loud skip of `what`. */
export function chromiumAvailable (what: string): boolean {
  if (existsSync(CHROMIUM)) return true
  if (process.env.CI === 'true') throw new Error(`Chromium is required in CI but ${CHROMIUM} is missing: apt-get install -y chromium`)
  process.stderr.write(`\n*** ${CHROMIUM} is missing: ${what} SKIPPED (apt-get install -y chromium) ***\n\n`)
  return false
}

/**
 * One Chromium for the suite (describe) it is called in: launched before the suite's first test
 * and closed after its last, since a launch costs more than most steps of a test. Each test opens
 * a context of its own (openSession): a fresh profile, with its own cookies and storage.
 */
export function chromiumForSuite (extraArgs: readonly string[] = []): () => Browser {
  let browser: Browser | undefined
  before(async () => { browser = await chromium.launch({ executablePath: CHROMIUM, headless: true, args: [...CHROMIUM_ARGS, ...extraArgs] }) })
  after(() => browser?.close())
  return () => {
    assert.ok(browser, 'Chromium was launched before the tests')
    return browser
  }
}

export interface Session {
  server: TestServer
  context: BrowserContext
  page: Page
  /** What the page reported: console errors (CSP violations among them) and uncaught exceptions. */
  consoleErrors: string[]
}

/**
 * The service on a real socket (startServer) and a fresh context of the browser with one page,
 * both closed after the test. The context's options may name the server: by default, relative
 * URLs go to it.
 */
export async function openSession (t: TestContext, browser: Browser, contextOptions = (server: TestServer): BrowserContextOptions => ({ baseURL: server.baseUrl })): Promise<Session> {
  // Registered first so that it runs first: the browser's keep-alive connections would hold up the server's close.
  let opened: BrowserContext | undefined
  t.after(() => opened?.close())
  const server = await startServer(t)
  const context = opened = await browser.newContext(contextOptions(server))
  const page = await context.newPage()
  const consoleErrors: string[] = []
  page.on('console', (message) => { if (message.type() === 'error') consoleErrors.push(message.text()) })
  page.on('pageerror', (error) => consoleErrors.push(error.message))
  return { server, context, page, consoleErrors }
}

/** Fills the email and password fields of the form shown. */
export async function fillCredentials (page: Page, email: string, password: string): Promise<void> {
  await page.getByLabel('Email').fill(email)
  await page.getByLabel('Password', { exact: true }).fill(password)
}

/** Sends the log-in form shown with these credentials; where it leads is the caller's to check. */
export async function submitLogIn (page: Page, email: string, password: string): Promise<void> {
  await fillCredentials(page, email, password)
  await page.getByRole('button', { name: 'Log in' }).click()
}

/** Fills in the sign-up form, which answers "Check your email" whatever the email. */
export async function signUp (page: Page, email: string, password: string): Promise<void> {
  await page.goto('/portal/signup')
  await fillCredentials(page, email, password)
  await page.getByRole('button', { name: 'Create account' }).click()
  await page.getByRole('heading', { name: 'Check your email' }).waitFor()
}

/**
 * Follows the verification link the sign-up wrote to the outbox, as the owner of the email would,
 * and logs in from the page it leads to: ends on the keys page.
 */
export async function verifyAndLogIn (page: Page, server: TestServer, email: string, password: string): Promise<void> {
  await page.goto(await eventually(async () => await linkPathOf(server.store, email, 'verify_email'), { timeout: 10_000 }))
  await page.locator('main').getByRole('link', { name: 'Log in' }).click()
  await page.waitForURL('**/portal/login')
  await submitLogIn(page, email, password)
  await page.waitForURL('**/portal/keys')
}

export async function logOut (page: Page): Promise<void> {
  await page.getByRole('button', { name: 'Log out' }).click()
  await page.waitForURL('**/portal/login?logged_out=1')
}

export interface KeyTerms {
  mode?: 'Live' | 'Test'
  expires?: string
  /** Scopes to uncheck (every scope is checked at first). */
  without?: string[]
}

/** Generates a key with the form of the keys page shown; answers the secret, which the page shows once. */
export async function generateKey (page: Page, label: string, terms: KeyTerms = {}): Promise<string> {
  await page.getByLabel('Label').fill(label)
  if (terms.mode !== undefined) await page.getByLabel(new RegExp(`^${terms.mode}:`)).check()
  for (const scope of terms.without ?? []) await page.getByLabel(scope).uncheck()
  if (terms.expires !== undefined) await page.getByLabel('Expires').selectOption(terms.expires)
  await page.getByRole('button', { name: 'Generate key' }).click()
  await page.locator('#new-key-value').waitFor()
  return await page.locator('#new-key-value').innerText()
}
