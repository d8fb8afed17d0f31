import { describe, test } from 'node:test'
import assert from 'node:assert/strict'
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
    for (const path of ['/docs', '/docs/']) {
      test(`${path} serves the API reference page as text/html without an API key`, async (t) => {
        const server = await startServer(t)
        const response = await fetch(`${server.baseUrl}${path}`)
        const html = await response.text()
        assert.equal(response.status, 200, html)
        assert.match(response.headers.get('content-type') ?? '', /^text\/html(;|$)/)
        assert.equal(new URL(response.url).origin, server.baseUrl, `redirected away to ${response.url}`)
        assert.match(html, /<html/i)
      })

      test(`${path} loads every script and stylesheet from the service itself, none from another host`, async (t) => {
        const server = await startServer(t)
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

    test('the page loads the same OpenAPI document as /v1/openapi.json, from the service itself', async (t) => {
      const server = await startServer(t)
      const page = await fetch(`${server.baseUrl}/docs/`)
      const scripts = referencesOf(await page.text()).filter((reference) => reference.tag === 'script')
      const sources = await Promise.all(scripts.map(async (script) => {
        const url = new URL(script.url, page.url)
        return { url, text: url.pathname.endsWith('swagger-initializer.js') ? await (await fetch(url)).text() : '' }
      }))
      const initializer = sources.find((source) => source.text !== '')
      assert.ok(initializer, `no swagger-initializer.js among ${JSON.stringify(scripts)}`)
      // Swagger UI's initializer: the document URL is either configured as "url":"…" or computed as url: resolveUrl('…').
      const specUrls = [
        ...[...initializer.text.matchAll(/"url"\s*:\s*"([^"]+)"/g)].map((match) => new URL(match[1] ?? '', page.url)),
        ...[...initializer.text.matchAll(/(?:^|[\s{,])url\s*:\s*resolveUrl\(\s*'([^']+)'\s*\)/g)].map((match) => new URL(match[1] ?? '', `${server.baseUrl}/docs/`))
      ]
      assert.ok(specUrls.length > 0, 'the initializer names the document it loads')
      const expected = await (await fetch(`${server.baseUrl}/v1/openapi.json`)).json() as unknown
      for (const url of specUrls) {
        assert.equal(url.origin, server.baseUrl, `the document is loaded from ${url}`)
        const response = await fetch(url)
        assert.equal(response.status, 200, url.pathname)
        assert.match(response.headers.get('content-type') ?? '', /^application\/json/, url.pathname)
        assert.deepEqual(await response.json(), expected, `${url.pathname} differs from /v1/openapi.json`)
      }
    })
  })
})
