import { describe, test, type TestContext } from 'node:test'
import assert from 'node:assert/strict'
import type { Browser, Page, Request } from 'playwright-core'
import { chromiumAvailable, chromiumForSuite, openSession, type Session } from '../helpers/chromium.js'

/** A name that is not localhost, which browsers treat as a secure context whatever the scheme. */
const HOST = 'animal-store.test'

/** A served app and a Chromium page (1200 × 900) that reaches it as http://animal-store.test:PORT, both closed after the test. */
async function openBrowser (t: TestContext, browser: Browser): Promise<Session & { origin: string }> {
  const session = await openSession(t, browser, () => ({ viewport: { width: 1200, height: 900 } }))
  return { ...session, origin: `http://${HOST}:${new URL(session.server.baseUrl).port}` }
}

describe('the API reference at /docs in Chromium', { skip: !chromiumAvailable('the browser test of the API reference page is') }, () => {
  const chromium = chromiumForSuite([`--host-resolver-rules=MAP ${HOST} 127.0.0.1`])

  test(`renders every operation over plain HTTP at ${HOST}, from this origin alone, within its own security policy`, { timeout: 120_000 }, async (t) => {
    const { origin, page, consoleErrors } = await openBrowser(t, chromium())

    const requests: Request[] = []
    const failures: string[] = []
    page.on('request', (request) => requests.push(request))
    page.on('requestfailed', (request) => failures.push(`${request.url()}: ${request.failure()?.errorText ?? 'failed'}`))
    page.on('response', (response) => { if (response.status() >= 400) failures.push(`${response.url()}: ${response.status()}`) })
    // Every violation of the page's policy, whether or not the browser also logs it.
    await page.addInitScript({
      content: `window.cspViolations = []; document.addEventListener('securitypolicyviolation', (event) =>
        window.cspViolations.push(event.effectiveDirective + ' ' + event.blockedURI + ' ' + event.sourceFile + ':' + event.lineNumber))`
    })

    const response = await page.goto(`${origin}/docs`)
    assert.equal(response?.status(), 200)
    const policy = response.headers()['content-security-policy'] ?? ''
    assert.match(policy, /default-src 'self'/, 'the page has a policy of its own')
    assert.doesNotMatch(policy, /upgrade-insecure-requests/, 'the policy does not send plain-HTTP assets to https')

    for (const operationId of ['listPets', 'createPet', 'getPet', 'listStoreOrders', 'getOpenApiDocument']) {
      await page.locator('.opblock-summary-operation-id', { hasText: new RegExp(`^${operationId}$`) }).waitFor({ timeout: 30_000 })
    }
    assert.equal(await page.title(), 'Animal Store API')
    assert.equal(await page.locator('.info .title').first().evaluate((title) => title.firstChild?.textContent?.trim()), 'Animal Store API')
    assert.equal(await page.locator('.topbar').count(), 0, 'no top bar, so no framework logo')
    assert.equal(await page.locator('img[src*="logo"], link[href*="favicon-32x32"], link[href*="favicon-16x16"]').count(), 0, 'no framework logo or icon')
    assert.equal(await page.locator('.info .main .link').innerText(), '/v1/openapi.json', 'the document is shown under its own address')
    assert.ok(await page.locator('.info .description a[href="/portal"]').count() > 0, 'the description links to the portal, where keys come from')

    // Each error status shows its own example: GET /pets answers 400 and 401 with different bodies.
    await page.locator('#operations-animals-listPets .opblock-summary').click()
    const example = (status: number) => page.locator(`#operations-animals-listPets tr.response[data-code="${status}"] .example`).first()
    await example(400).waitFor()
    assert.match(await example(400).innerText(), /query parameter limit must be an integer from 1 to 100/)
    assert.match(await example(401).innerText(), /"unauthorized"/)
    assert.match(await example(429).innerText(), /"rate_limited"/)
    assert.match(await example(503).innerText(), /"service_unavailable"/)

    const urls = requests.map((request) => request.url())
    assert.ok(urls.includes(`${origin}/v1/openapi.json`), `the page loads /v1/openapi.json: ${urls.join(', ')}`)
    assert.deepEqual(urls.filter((url) => !url.startsWith(`${origin}/`) && !url.startsWith('data:')), [], 'every request goes to this origin over plain HTTP, none upgraded or elsewhere')
    assert.equal(urls.some((url) => url.endsWith('/docs/json')), false, 'not the plugin\'s copy of the document')
    assert.deepEqual(failures, [], 'no request failed')
    assert.deepEqual(await page.evaluate<string[]>('window.cspViolations'), [], 'no CSP violation')
    assert.deepEqual(consoleErrors, [], 'no console errors')
  })

  test('executes every operation from the page with a real key, as it comes pre-filled, and gets a 2xx or the documented 501', { timeout: 180_000 }, async (t) => {
    const { server, origin, page } = await openBrowser(t, chromium())
    assert.equal((await page.goto(`${origin}/docs`))?.status(), 200)

    const document = await (await fetch(`${server.baseUrl}/v1/openapi.json`)).json() as { paths: Record<string, Record<string, { operationId: string }>> }
    const documented = Object.values(document.paths).flatMap((item) => Object.values(item).map((operation) => operation.operationId))
    const summaries = page.locator('.opblock-summary-operation-id')
    await summaries.first().waitFor({ timeout: 30_000 })
    assert.deepEqual((await summaries.allInnerTexts()).toSorted(), documented.toSorted(), 'the page shows every operation of the document')

    await page.locator('.auth-wrapper .authorize').click()
    await page.locator('.auth-container input[type="text"], .auth-container input[type="password"]').first().fill(server.key)
    await page.locator('.auth-btn-wrapper .modal-btn.authorize').click()
    await page.locator('.auth-btn-wrapper .btn-done').click()

    // createPet first, so that getPet's example id names an animal that exists.
    const order = [...documented].sort((a, b) => Number(b === 'createPet') - Number(a === 'createPet'))
    const outcomes: Record<string, string> = {}
    const expected: Record<string, string> = {}
    for (const operationId of order) {
      const status = await executeFromPage(page, operationId)
      outcomes[operationId] = status === 501 ? '501' : `${Math.floor(status / 100)}xx (${status})`
      expected[operationId] = operationId === 'listStoreOrders' ? '501' : `2xx (${status})`
    }
    assert.deepEqual(outcomes, expected, 'every operation succeeds as the page fills it in; listStoreOrders answers its documented 501')
  })
})

/** Opens the operation, presses "Try it out" and "Execute" with what the page pre-fills, and returns the status shown. */
async function executeFromPage (page: Page, operationId: string): Promise<number> {
  const block = page.locator('.opblock').filter({ has: page.locator('.opblock-summary-operation-id', { hasText: new RegExp(`^${operationId}$`) }) })
  await block.locator('.opblock-summary').click()
  await block.locator('.try-out__btn').click()
  await block.locator('.execute').click()
  const status = block.locator('.live-responses-table .response .response-col_status').first()
  await status.waitFor({ timeout: 30_000 })
  return Number((await status.innerText()).trim().split(/\s/)[0])
}
