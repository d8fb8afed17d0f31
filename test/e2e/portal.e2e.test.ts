import { existsSync, mkdirSync, readFileSync, writeFileSync } from 'node:fs'
import { join } from 'node:path'
import { describe, test, type TestContext } from 'node:test'
import assert from 'node:assert/strict'
import type { Browser, Page } from 'playwright-core'
import { chromiumAvailable, chromiumForSuite, fillCredentials, generateKey, logOut, openSession, signUp, submitLogIn, verifyAndLogIn, type Session } from '../helpers/chromium.js'
import { eventually } from '../helpers/eventually.js'
import type { TestServer } from '../helpers/start-server.js'

const PASSWORD = 'correct horse battery staple'
const SCREENSHOT = join(import.meta.dirname, '..', '..', 'docs', 'portal-keys.png')
/** What the screenshot shows, beside it: the page's sections and the keys table's columns, compared with the page on every run. */
const SCREENSHOT_STRUCTURE = join(import.meta.dirname, '..', '..', 'docs', 'portal-keys.json')
const UPDATE_HINT = 'run UPDATE_SCREENSHOTS=1 node --import tsx --test test/e2e/portal.e2e.test.ts and commit docs/portal-keys.png and docs/portal-keys.json'

interface PageStructure { sections: string[], keysTableColumns: string[] }

/** The structure of the keys page as a reader of the screenshot sees it. */
async function keysPageStructure (page: Page): Promise<PageStructure> {
  return {
    sections: await page.locator('main h2').allTextContents(),
    keysTableColumns: (await page.locator('table.keys').first().locator('thead th').allTextContents()).map((text) => text.trim())
  }
}

/**
 * The service and a fresh context (1000 × 800) that may use the clipboard, as the copy button does.
 * With an email, also an account of that email, signed up and verified in the browser, logged in.
 */
async function open (t: TestContext, browser: Browser, account?: string): Promise<Session> {
  const session = await openSession(t, browser, (server) => ({ viewport: { width: 1000, height: 800 }, baseURL: server.baseUrl }))
  await session.context.grantPermissions(['clipboard-read', 'clipboard-write'], { origin: session.server.baseUrl })
  if (account !== undefined) await signUpVerified(session.page, session.server, account)
  return session
}

/** Signs up, then follows the verification link and logs in, as the owner of the email would. */
async function signUpVerified (page: Page, server: TestServer, email: string): Promise<void> {
  await signUp(page, email, PASSWORD)
  await verifyAndLogIn(page, server, email, PASSWORD)
}

async function apiStatus (baseUrl: string, key: string): Promise<number> {
  const response = await fetch(`${baseUrl}/v1/pets?limit=5`, { headers: { authorization: `Bearer ${key}` } })
  await response.arrayBuffer()
  return response.status
}

const alert = (page: Page) => page.locator('p.message.error')

/** Runs the check until it returns true, reloading the page between tries; fails after the deadline. */
async function reloadUntil (page: Page, what: string, deadlineMs: number, check: () => Promise<boolean>): Promise<void> {
  let first = true
  await eventually(async () => {
    if (!first) await page.reload()
    first = false
    assert.ok(await check(), `${what}: not seen`)
  }, { timeout: deadlineMs, interval: 500 })
}

async function createPet (baseUrl: string, key: string): Promise<{ status: number, code: string | undefined }> {
  const response = await fetch(`${baseUrl}/v1/pets`, {
    method: 'POST',
    headers: { authorization: `Bearer ${key}`, 'content-type': 'application/json' },
    body: JSON.stringify({ name: 'Rex', categoryId: 1, status: 'available' })
  })
  const body = await response.json() as { code?: string }
  return { status: response.status, code: body.code }
}

describe('developer portal in Chromium', { skip: !chromiumAvailable('the browser end-to-end tests of the developer portal are') }, () => {
  const chromium = chromiumForSuite()

  test('sign up, log in, generate a key, call the API with it, revoke it and see the API refuse it within 1 s', { timeout: 120_000 }, async (t) => {
    const { server, page, consoleErrors } = await open(t, chromium())

    await page.goto('/portal')
    await assert.doesNotReject(page.waitForURL('**/portal/login'))
    await page.getByRole('link', { name: 'Sign up' }).click()
    await signUpVerified(page, server, 'newcomer@example.com')
    assert.match(await page.locator('h1').innerText(), /API keys/)

    await logOut(page)
    assert.match(await page.locator('p.message.notice').innerText(), /You have logged out/)
    await page.goto('/portal/keys')
    await page.waitForURL('**/portal/login')

    await submitLogIn(page, 'newcomer@example.com', PASSWORD)
    await page.waitForURL('**/portal/keys')

    const key = await generateKey(page, 'laptop')
    assert.match(key, /^ask_[0-9A-Za-z]{38}$/)
    assert.match(await page.locator('.new-key .warning').innerText(), /it will not be shown again/)

    // The copy button exists only once the script ran (no inline script: the CSP would have blocked it).
    const copyKey = page.getByRole('button', { name: 'Copy key' })
    assert.equal(await copyKey.isVisible(), true, 'the copy button is shown by the script')
    await copyKey.click()
    await page.locator('#new-key-status', { hasText: /Copied|Selected/ }).waitFor()
    if (/Copied/.test(await page.locator('#new-key-status').innerText())) {
      assert.equal(await page.evaluate<string>('navigator.clipboard.readText()'), key)
    }
    const snippet = await page.locator('#snippet').innerText()
    assert.equal(snippet, `export ANIMAL_STORE_KEY='${key}'\ncurl -s "${server.baseUrl}/v1/pets?limit=5" -H "Authorization: Bearer $ANIMAL_STORE_KEY"`)

    assert.equal(await apiStatus(server.baseUrl, key), 200, 'the first API call with the new key succeeds')

    const kept = await generateKey(page, 'ci-server', { expires: '90d' })

    await page.goto('/portal/keys')
    assert.equal((await page.content()).includes(key), false, 'the secret is not shown again')
    await page.getByRole('link', { name: 'Revoke the key laptop' }).click()
    await page.waitForURL('**/revoke')
    await page.getByRole('button', { name: 'Revoke key' }).click()
    await page.waitForURL('**/portal/keys?revoked=*')
    const revokedAt = performance.now()
    let status = await apiStatus(server.baseUrl, key)
    while (status === 200 && performance.now() - revokedAt < 3000) {
      await new Promise((resolve) => setTimeout(resolve, 25))
      status = await apiStatus(server.baseUrl, key)
    }
    const elapsed = performance.now() - revokedAt
    assert.equal(status, 401, 'the revoked key is refused')
    assert.ok(elapsed < 1000, `refused after ${Math.round(elapsed)} ms`)
    assert.equal(await apiStatus(server.baseUrl, kept), 200, 'the other key still works')
    assert.match(await page.locator('p.message.notice').innerText(), /The key laptop has been revoked/)
    assert.match(await page.locator('tr.revoked').innerText(), /laptop/)

    // The committed screenshot is rewritten only when asked, so a test run leaves the working tree as it found it;
    // otherwise the page's structure must still be the one the picture shows.
    const screenshot = await page.screenshot({ fullPage: true })
    assert.ok(screenshot.length > 0, 'the keys page renders to an image')
    const structure = await keysPageStructure(page)
    if (process.env.UPDATE_SCREENSHOTS === '1') {
      mkdirSync(join(SCREENSHOT, '..'), { recursive: true })
      writeFileSync(SCREENSHOT, screenshot)
      writeFileSync(SCREENSHOT_STRUCTURE, JSON.stringify(structure, null, 2) + '\n')
    } else {
      assert.ok(existsSync(SCREENSHOT_STRUCTURE), `${SCREENSHOT_STRUCTURE} is missing: ${UPDATE_HINT}`)
      assert.deepEqual(structure, JSON.parse(readFileSync(SCREENSHOT_STRUCTURE, 'utf8')), `the keys page no longer looks like docs/portal-keys.png: ${UPDATE_HINT}`)
    }

    // Phone width: nothing wider than the screen.
    await page.setViewportSize({ width: 360, height: 740 })
    const overflow = await page.evaluate<number>('document.documentElement.scrollWidth - document.documentElement.clientWidth')
    assert.ok(overflow <= 0, `the keys page scrolls sideways by ${overflow} px at 360 px`)

    assert.deepEqual(consoleErrors, [], 'no console errors, no CSP violations')
  })

  test('a read-only key: made in the portal, refused a write by the API, its usage charted, rolled, and the events listed', { timeout: 180_000 }, async (t) => {
    const { server, page, consoleErrors } = await open(t, chromium(), 'reader@example.com')

    assert.equal(await page.getByLabel('animals:read').isChecked(), true, 'both scopes are checked at first')
    const key = await generateKey(page, 'reporting', { without: ['animals:write'], expires: '30d' })
    const terms = await page.locator('#new-key-terms').innerText()
    assert.match(terms, /animals:read/)
    assert.doesNotMatch(terms, /animals:write/)
    assert.match(terms, /Expires \d{4}-\d{2}-\d{2} \(in 30 days\)/)

    assert.equal(await apiStatus(server.baseUrl, key), 200, 'the read-only key reads')
    assert.deepEqual(await createPet(server.baseUrl, key), { status: 403, code: 'insufficient_scope' }, 'and may not write')

    // Usage reaches the database within 15 s (UsageRecorder): the page shows it once it is there.
    await page.goto('/portal/keys')
    await page.getByRole('link', { name: 'Usage and details of the key reporting' }).click()
    await page.waitForURL('**/portal/keys/key_*')
    const chart = page.getByRole('img', { name: /Requests per day with the key reporting, last 30 days/ })
    await chart.waitFor()
    const today = page.locator('svg.usage-chart g.day').last()
    await reloadUntil(page, 'the usage of the key', 60_000, async () => await today.getAttribute('data-total') === '2')
    assert.equal(await page.locator('svg.usage-chart g.day').count(), 30, 'one bar per day')
    assert.equal(await today.locator('rect.bar-2xx').count(), 1)
    assert.equal(await today.locator('rect.bar-4xx').count(), 1)
    assert.equal(await today.locator('rect.bar-2xx').evaluate((rect) => (globalThis as unknown as { getComputedStyle: (element: unknown) => { fill: string } }).getComputedStyle(rect).fill), 'rgb(26, 127, 55)', 'the stylesheet colours the bars')
    assert.match(await page.locator('#usage-chart-desc').textContent() ?? '', /^2 requests in the 30 days .*: 1 succeeded \(2xx\), 1 refused \(4xx\), 0 failed \(5xx\)\./)
    assert.equal(await page.locator('#usage-table').isVisible(), false, 'the table of numbers is folded away')
    await page.getByText('Requests per day, as a table').click()
    assert.equal(await page.locator('#usage-table').isVisible(), true)
    assert.match(await page.locator('#usage-by-operation').innerText(), /createPet\s+0\s+1\s+0\s+1/)
    // On a phone the chart scales down; its axis labels must stay readable, not shrink with it.
    await page.setViewportSize({ width: 390, height: 844 })
    const labelHeights = await page.locator('svg.usage-chart text.axis').evaluateAll((texts) => texts.map((text) => (text as unknown as { getBoundingClientRect: () => { height: number } }).getBoundingClientRect().height))
    assert.ok(labelHeights.length > 0 && labelHeights.every((height) => height >= 10), `axis labels ${labelHeights.join(', ')} px tall at 390 px`)
    await page.setViewportSize({ width: 360, height: 740 })
    const overflow = await page.evaluate<number>('document.documentElement.scrollWidth - document.documentElement.clientWidth')
    assert.ok(overflow <= 0, `the key page scrolls sideways by ${overflow} px at 360 px`)
    await page.setViewportSize({ width: 1000, height: 800 })

    await page.getByRole('link', { name: 'Roll this key…' }).click()
    await page.waitForURL('**/roll')
    assert.match(await page.locator('main').innerText(), /new key with the same label and scopes/)
    assert.equal(await page.getByLabel('The old key keeps working for').inputValue(), '24h')
    await page.getByLabel('The old key keeps working for').selectOption('1h')
    await page.getByRole('button', { name: 'Roll key' }).click()
    await page.locator('#new-key-value').waitFor()
    const rolled = await page.locator('#new-key-value').innerText()
    assert.notEqual(rolled, key)
    assert.match(await page.locator('p.message.notice').innerText(), /The key reporting was rolled: it keeps working until/)
    assert.equal(await apiStatus(server.baseUrl, rolled), 200, 'the new key works')
    assert.equal(await apiStatus(server.baseUrl, key), 200, 'the old key works in its grace period')
    assert.equal((await createPet(server.baseUrl, rolled)).code, 'insufficient_scope', 'the new key has the same scopes')
    // Reloading the page that showed the new key posts nothing again (post-redirect-get): no 409, and the secret is gone.
    const reloaded = await page.reload()
    assert.equal(reloaded?.status(), 200)
    assert.equal(await page.locator('#new-key-value').count(), 0, 'the secret is shown once')
    assert.match(await page.locator('p.message.notice').innerText(), /The key reporting was shown once/)
    await page.goto('/portal/keys')
    assert.match(await page.locator('table.keys').first().innerText(), /Rolled: replaced by reporting ask_[0-9A-Za-z]{8}…; stops working/)

    await page.getByRole('link', { name: 'Events', exact: true }).click()
    await page.waitForURL('**/portal/events')
    const events = async (): Promise<string[]> => await page.locator('table.events tbody td[data-label="Event"]').allInnerTexts()
    await reloadUntil(page, 'the scope refusal among the events', 10_000, async () => (await events()).includes('Request refused: scope missing'))
    assert.deepEqual((await events()).filter((event) => event !== 'Request refused: scope missing'), ['Key rolled', 'Key created', 'Logged in', 'Email address verified', 'Verification link sent', 'Password set', 'Account created'])
    assert.match(await page.locator('table.events').innerText(), /Portal\s+127\.0\.0\.1/)

    assert.deepEqual(consoleErrors, [], 'no console errors, no CSP violations')
  })

  test('failure paths: wrong password, unknown email, duplicate email, short password and a form without its CSRF token', { timeout: 120_000 }, async (t) => {
    const { page, consoleErrors } = await open(t, chromium(), 'taken@example.com')
    await logOut(page)

    await submitLogIn(page, 'taken@example.com', 'not the right password')
    await alert(page).waitFor()
    const wrongPassword = await alert(page).innerText()
    assert.equal(wrongPassword, 'The email address or the password is not correct.')
    assert.equal(await page.getByLabel('Email').inputValue(), 'taken@example.com', 'the email is kept')
    assert.equal(await page.getByLabel('Password', { exact: true }).inputValue(), '', 'the password is not sent back')

    await submitLogIn(page, 'nobody@example.com', PASSWORD)
    await page.waitForLoadState()
    assert.equal(await alert(page).innerText(), wrongPassword, 'an unknown email gets the same answer')

    // A taken email gets the page a new one gets: the owner is mailed instead.
    await signUp(page, 'taken@example.com', 'another long password')
    assert.match(await page.locator('main').innerText(), /We sent a link to taken@example\.com/)

    await page.goto('/portal/signup')
    assert.equal(await page.getByLabel('Password', { exact: true }).getAttribute('minlength'), '12', 'the browser checks the length first')
    // Past the browser's own check, the server refuses it too.
    await page.evaluate("document.querySelector('form.stack').noValidate = true")
    await fillCredentials(page, 'short@example.com', 'too short')
    await page.getByRole('button', { name: 'Create account' }).click()
    await page.waitForLoadState()
    assert.equal(await alert(page).innerText(), 'The password must be at least 12 characters long.')

    await page.goto('/portal/login')
    await page.evaluate("document.querySelector('form.stack input[name=\"_csrf\"]').remove()")
    await fillCredentials(page, 'taken@example.com', PASSWORD)
    const [response] = await Promise.all([page.waitForResponse((candidate) => candidate.request().method() === 'POST'), page.getByRole('button', { name: 'Log in' }).click()])
    assert.equal(response.status(), 403)
    assert.match(await alert(page).innerText(), /form has expired or was not sent from this site/)
    assert.equal(page.url().endsWith('/portal/login'), true, 'not logged in')

    // The re-rendered form carries a fresh token and works.
    await submitLogIn(page, 'taken@example.com', PASSWORD)
    await page.waitForURL('**/portal/keys')

    // Logged in, a form without its token changes nothing either.
    await page.evaluate("document.querySelector('form[action=\"/portal/keys\"] input[name=\"_csrf\"]').remove()")
    await page.getByLabel('Label').fill('forged')
    const [generate] = await Promise.all([page.waitForResponse((candidate) => candidate.request().method() === 'POST'), page.getByRole('button', { name: 'Generate key' }).click()])
    assert.equal(generate.status(), 403)
    await page.goto('/portal/keys')
    assert.match(await page.locator('main').innerText(), /You have no keys yet/)

    assert.deepEqual(consoleErrors.filter((text) => !/status of (400|401|403|409)/.test(text)), [], 'no console errors beyond the refused requests')
  })
})
