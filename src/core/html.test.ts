import { test } from 'node:test'
import assert from 'node:assert/strict'
import { escapeHtml, html, SafeHtml } from './html.js'

test('escapeHtml escapes every character that can end a text node or a quoted attribute', () => {
  assert.equal(escapeHtml('<script>alert("x" + \'y\' + `z`)</script> & co'),
    '&lt;script&gt;alert(&quot;x&quot; + &#39;y&#39; + &#96;z&#96;)&lt;/script&gt; &amp; co')
})

test('html escapes interpolated strings and numbers but keeps the template itself', () => {
  const evil = '"><img src=x onerror=alert(1)>'
  assert.equal(html`<input value="${evil}"><p>${42}</p>`.toString(), '<input value="&quot;&gt;&lt;img src=x onerror=alert(1)&gt;"><p>42</p>')
})

test('html nests: SafeHtml from another html call is not escaped twice', () => {
  const inner = html`<b>${'a<b'}</b>`
  assert.equal(html`<p>${inner}</p>`.toString(), '<p><b>a&lt;b</b></p>')
})

test('html renders arrays item by item and skips undefined, null and false', () => {
  const items = ['<1>', html`<i>2</i>`]
  assert.equal(html`<ul>${items.map((item) => html`<li>${item}</li>`)}</ul>`.toString(), '<ul><li>&lt;1&gt;</li><li><i>2</i></li></ul>')
  assert.equal(html`${undefined}${null}${false}${0}`.toString(), '0')
  assert.equal(html`${['<', '>']}`.toString(), '&lt;&gt;')
})

test('an object that merely looks like SafeHtml is escaped', () => {
  const forged = { value: '<script>' }
  assert.equal(html`${forged}`.toString(), '[object Object]')
  assert.ok(html`x` instanceof SafeHtml)
})
