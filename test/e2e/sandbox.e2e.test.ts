import { describe, test } from 'node:test'
import assert from 'node:assert/strict'
import type { Page } from 'playwright-core'
import { chromiumAvailable, chromiumForSuite, generateKey, openSession, signUp, verifyAndLogIn } from '../helpers/chromium.js'

const PASSWORD = 'correct horse battery staple'

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

describe('test mode in Chromium', { skip: !chromiumAvailable('the browser end-to-end test of test mode is') }, () => {
  const chromium = chromiumForSuite()

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
