import { existsSync } from 'node:fs'
import { test, type TestContext } from 'node:test'
import assert from 'node:assert/strict'
import { chromium, type BrowserContext, type Page } from 'playwright-core'
import { tempDir } from '../helpers/build-app.js'
import { eventually } from '../helpers/eventually.js'
import { linkPathOf } from '../helpers/portal-client.js'
import { startServer, type TestServer } from '../helpers/start-server.js'

/** Debian's chromium package: Playwright's own browser download does not work here. */
const CHROMIUM = '/usr/bin/chromium'
const CHROMIUM_ARGS = ['--headless', '--no-sandbox', '--disable-gpu', '--disable-background-networking', '--disable-component-update', '--disable-sync', '--no-first-run', '--disable-quic']
const PASSWORD = 'correct horse battery staple'

/** Whether the browser is installed; under CI=true a missing browser is a failure, elsewhere a loud skip. */
function chromiumAvailable (): boolean {
  if (existsSync(CHROMIUM)) return true
  if (process.env.CI === 'true') throw new Error(`Chromium is required in CI but ${CHROMIUM} is missing: apt-get install -y chromium`)
  process.stderr.write(`\n*** ${CHROMIUM} is missing: the browser end-to-end test of test mode is SKIPPED (apt-get install -y chromium) ***\n\n`)
  return false
}

async function open (t: TestContext): Promise<{ server: TestServer, page: Page, consoleErrors: string[] }> {
  // Registered first so that it runs first: the browser's keep-alive connections would hold up the server's close.
  let browser: BrowserContext | undefined
  t.after(() => browser?.close())
  const server = await startServer(t)
  const context = browser = await chromium.launchPersistentContext(tempDir(t), { executablePath: CHROMIUM, headless: true, args: CHROMIUM_ARGS, baseURL: server.baseUrl })
  const page = context.pages()[0] ?? await context.newPage()
  const consoleErrors: string[] = []
  page.on('console', (message) => { if (message.type() === 'error') consoleErrors.push(message.text()) })
  page.on('pageerror', (error) => consoleErrors.push(error.message))
  return { server, page, consoleErrors }
}

async function generateKey (page: Page, label: string, mode: 'Live' | 'Test'): Promise<string> {
  await page.goto('/portal/keys')
  await page.getByLabel('Label').fill(label)
  await page.getByLabel(new RegExp(`^${mode}:`)).check()
  await page.getByRole('button', { name: 'Generate key' }).click()
  await page.locator('#new-key-value').waitFor()
  return await page.locator('#new-key-value').innerText()
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

test('test mode in Chromium: generate a test key, create an animal with it, see it only in test mode, reset, see the seeded catalogue again', { skip: !chromiumAvailable(), timeout: 120_000 }, async (t) => {
  const { server, page, consoleErrors } = await open(t)
  await page.goto('/portal/signup')
  await page.getByLabel('Email').fill('tester@example.com')
  await page.getByLabel('Password', { exact: true }).fill(PASSWORD)
  await page.getByRole('button', { name: 'Create account' }).click()
  await page.getByRole('heading', { name: 'Check your email' }).waitFor()
  // Keys need a verified email: the link the sign-up wrote to the outbox, then its page's log-in link.
  await page.goto(await eventually(async () => await linkPathOf(server.store, 'tester@example.com', 'verify_email'), { timeout: 10_000 }))
  await page.locator('main').getByRole('link', { name: 'Log in' }).click()
  await page.getByLabel('Email').fill('tester@example.com')
  await page.getByLabel('Password', { exact: true }).fill(PASSWORD)
  await page.getByRole('button', { name: 'Log in' }).click()
  await page.waitForURL('**/portal/keys')

  const testKey = await generateKey(page, 'staging', 'Test')
  assert.match(testKey, /^ask_test_[0-9A-Za-z]{38}$/)
  assert.match(await page.locator('#new-key-terms').innerText(), /Mode\s+Test/)
  assert.match(await page.locator('#snippet').innerText(), /ask_test_/)
  const liveKey = await generateKey(page, 'production', 'Live')
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
