import assert from 'node:assert/strict'
import { test } from 'node:test'
import { mailLinksOf, message, securityMail } from './mail-messages.js'
import { backoffMs } from './mail-sender.js'

test('links point at PUBLIC_BASE_URL without its /v1, or at the local port', () => {
  assert.equal(mailLinksOf({ publicBaseUrl: 'https://store.example.com/v1', port: 8080 }).base, 'https://store.example.com')
  assert.equal(mailLinksOf({ publicBaseUrl: 'https://example.com/pets/v1/', port: 8080 }).base, 'https://example.com/pets')
  assert.equal(mailLinksOf({ publicBaseUrl: undefined, port: 3000 }).base, 'http://localhost:3000')
})

test('a message says the same in both parts, escapes what it quotes, and links once', () => {
  const mail = message({ recipient: 'a@example.com', kind: 'test', subject: 'S <b>', lines: ['Label “<script>”'], action: 'Open & go', link: 'http://localhost:8080/portal/keys?a=1&b=2', footer: 'F' })
  assert.match(mail.text, /Label “<script>”/)
  assert.match(mail.html, /Label “&lt;script&gt;”/)
  assert.deepEqual([...mail.html.matchAll(/href="([^"]+)"/g)].map((match) => match[1]), ['http://localhost:8080/portal/keys?a=1&amp;b=2'])
  assert.equal(mail.text.match(/https?:\/\//g)?.length, 1)
})

test('security mail names what changed, when and from where, and links to act', () => {
  const mail = securityMail({ base: 'https://s.example' }, 'o@example.com', { type: 'key_rolled', keyId: 'key_AAAAAAAAAAAAAAAA', successorId: 'key_BBBBBBBBBBBBBBBB' }, new Date('2026-01-02T03:04:05Z'), '192.0.2.1')
  assert.match(mail.text, /key_AAAAAAAAAAAAAAAA was rolled at 2026-01-02 03:04:05 UTC from the address 192\.0\.2\.1: key_BBBBBBBBBBBBBBBB replaces it/)
  assert.equal(mail.link, 'https://s.example/portal/keys')
  assert.equal(securityMail({ base: 'https://s.example' }, 'o@example.com', { type: 'two_step_disabled' }, new Date()).kind, 'two_step_disabled')
})

test('retries back off exponentially from 1 s to at most 15 minutes', () => {
  assert.deepEqual([1, 2, 3, 4].map(backoffMs), [1000, 2000, 4000, 8000])
  assert.equal(backoffMs(40), 15 * 60_000)
})
