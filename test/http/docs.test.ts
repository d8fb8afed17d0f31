import { describe, test } from 'node:test'
import assert from 'node:assert/strict'
import { perSuite } from '../helpers/build-app.js'
import { startServer } from '../helpers/start-server.js'

interface Reference { tag: 'script' | 'stylesheet' | 'link' | 'img', url: string }

/** The resources an HTML page makes a browser load: scripts, stylesheets, icons and other links, images. */
function referencesOf (html: string): Reference[] {
  const references: Reference[] = []
  for (const [tag] of html.matchAll(/<(?:script|link|img)\b[^>]*>/gi)) {
    const name = /^<(\w+)/.exec(tag)?.[1]?.toLowerCase()
    const url = /\b(?:src|href)\s*=\s*["']([^"']+)["']/i.exec(tag)?.[1]
    if (url === undefined) continue
    if (name === 'script') references.push({ tag: 'script', url })
    else if (name === 'img') references.push({ tag: 'img', url })
    else references.push({ tag: /\brel\s*=\s*["']?stylesheet/i.test(tag) ? 'stylesheet' : 'link', url })
  }
  return references
}

/** url(...) and @import targets of a stylesheet, data: URIs left out. */
function cssReferencesOf (css: string): string[] {
  const urls = [...css.matchAll(/url\(\s*(["']?)([^"')]+)\1\s*\)/gi), ...css.matchAll(/@import\s+(["'])([^"']+)\1/gi)]
    .map((match) => match[2] ?? '')
  return urls.filter((url) => !/^data:/i.test(url))
}

describe('GET /docs', () => {
  describe('happy', () => {
    // The tests here only read: one server for all.
    const shared = perSuite(async (scope) => await startServer(scope))

    for (const path of ['/docs', '/docs/']) {
      test(`${path} serves the API reference page as text/html without an API key`, async () => {
        const server = await shared()
        const response = await fetch(`${server.baseUrl}${path}`)
        const html = await response.text()
        assert.equal(response.status, 200, html)
        assert.match(response.headers.get('content-type') ?? '', /^text\/html(;|$)/)
        assert.equal(new URL(response.url).origin, server.baseUrl, `redirected away to ${response.url}`)
        assert.match(html, /<html/i)
      })

      test(`${path} loads every script and stylesheet from the service itself, none from another host`, async () => {
        const server = await shared()
        const page = await fetch(`${server.baseUrl}${path}`)
        assert.equal(page.status, 200)
        const html = await page.text()
        const references = referencesOf(html)
        assert.ok(references.some((reference) => reference.tag === 'script'), `no script in ${html}`)
        assert.ok(references.some((reference) => reference.tag === 'stylesheet'), `no stylesheet in ${html}`)
        assert.deepEqual([...html.matchAll(/(?:https?:)?\/\/[A-Za-z0-9.-]+\.[A-Za-z]{2,}[^\s"'<>]*/g)].map((match) => match[0]), [],
          'the page names no external http(s) address')

        for (const reference of references) {
          if (/^data:/i.test(reference.url)) continue
          const url = new URL(reference.url, page.url)
          assert.equal(url.origin, server.baseUrl, `${reference.tag} ${reference.url} is loaded from another host`)
          const response = await fetch(url)
          const body = await response.text()
          assert.equal(response.status, 200, `${reference.tag} ${url.pathname}: ${body.slice(0, 200)}`)
          if (reference.tag === 'script') assert.match(response.headers.get('content-type') ?? '', /javascript/, url.pathname)
          if (reference.tag === 'stylesheet') {
            assert.match(response.headers.get('content-type') ?? '', /^text\/css/, url.pathname)
            for (const inner of cssReferencesOf(body)) {
              const innerUrl = new URL(inner, url)
              assert.equal(innerUrl.origin, server.baseUrl, `${url.pathname} loads ${inner} from another host`)
              assert.equal((await fetch(innerUrl)).status, 200, `${url.pathname} loads ${inner}`)
            }
          }
        }
      })
    }

    test('the page hands Swagger UI /v1/openapi.json, the document the API serves, not the plugin\'s copy', async () => {
      const server = await shared()
      const page = await fetch(`${server.baseUrl}/docs/`)
      const scripts = referencesOf(await page.text()).filter((reference) => reference.tag === 'script').map((script) => new URL(script.url, page.url))
      const override = scripts.find((url) => url.pathname.endsWith('/reference.js'))
      assert.ok(override, `no reference.js among ${scripts.join(', ')}`)
      assert.ok(scripts.indexOf(override) > scripts.findIndex((url) => url.pathname.endsWith('/swagger-initializer.js')), 'reference.js runs after the initializer is defined')
      const text = await (await fetch(override)).text()
      const named = [...text.matchAll(/url:\s*'([^']+)'/g)].map((match) => match[1])
      assert.deepEqual(named, ['/v1/openapi.json'])
      const document = await fetch(`${server.baseUrl}/v1/openapi.json`)
      assert.equal(document.status, 200)
      assert.match(document.headers.get('content-type') ?? '', /^application\/json/)
    })

    test('/ redirects to the reference page', async () => {
      const { app } = await shared()
      for (const method of ['GET', 'HEAD'] as const) {
        const response = await app.inject({ method, url: '/' })
        assert.equal(response.statusCode, 302, method)
        assert.equal(response.headers.location, '/docs', method)
      }
    })
  })
})
