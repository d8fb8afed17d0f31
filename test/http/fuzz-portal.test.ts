import { describe, test, type TestContext } from 'node:test'
import assert from 'node:assert/strict'
import fc from 'fast-check'
import { buildTestApp, TEST_ENGINE, type TestApp } from '../helpers/build-app.js'
import { csrfTokenOf, PortalClient, TEST_PASSWORD } from '../helpers/portal-client.js'
import { BAD_ESCAPES, countRequest, FUZZ_ENV, INVALID_UTF8, REPLAY, SEED, assertPrototypesUnchanged, encodeComponent, encodingStyle, integerFromEnv, testPrototypesUnchanged, unicodeString, wildString } from '../helpers/fuzz.js'

// ---------------------------------------------------------------------------------------
// The developer portal's forms. Not in the API document: their oracle is the portal's own
// contract (docs/portal.md): HTML pages, a status from the form's short list, never 5xx; a
// control character in a field that was read gets 400 naming that field; nothing with a
// control character is stored. Each password check costs a scrypt, so the runs are fewer:
// FUZZ_PORTAL_RUNS in all (default 120; 80 with TEST_ENGINE=postgres; npm run reliability posts
// 2,000), shared by the forms as PORTAL_SHARES says (log-in, where nearly every run checks a
// password, least).

const PORTAL_RUNS = integerFromEnv('FUZZ_PORTAL_RUNS') ?? (TEST_ENGINE === 'postgres' ? 80 : 120)
const PORTAL_SHARES = { signup: 0.2, login: 0.1, generateKey: 0.4, revokeKey: 0.3 } as const
const PORTAL_FORMS = Object.keys(PORTAL_SHARES) as Array<keyof typeof PORTAL_SHARES>
type PortalForm = keyof typeof PORTAL_SHARES
/** The password of the account the runs log in to: signedUpAs gives it. */
const PORTAL_PASSWORD = TEST_PASSWORD
const HTML_TYPE = /^text\/html; charset=utf-8$/
const FORM_STATUSES: Record<PortalForm, number[]> = {
  signup: [200, 400, 403, 413, 415, 429],
  login: [303, 400, 401, 403, 413, 415, 429],
  generateKey: [303, 400, 403, 413, 415, 429],
  revokeKey: [303, 403, 404, 413, 415, 429]
}
const FIELD_NAMES: Record<string, string> = { email: 'email address', password: 'password', label: 'label' }

// eslint-disable-next-line no-control-regex -- control characters are what these runs are about
const CONTROL = /[\u0000-\u001f\u007f-\u009f]/
/** Bidirectional controls: refused in every portal field but the password (docs/decisions.md, text rules). */
const BIDI = /[\u202a-\u202e\u2066-\u2069\u200e\u200f\u061c]/
/** Whether the portal refuses the value of the named field for what it contains. */
const refusedText = ([name, value]: [string, string]): boolean => CONTROL.test(value) || (name !== 'password' && BIDI.test(value))
const controlCharacter = fc.oneof(fc.integer({ min: 0, max: 0x1f }), fc.integer({ min: 0x7f, max: 0x9f }), fc.constantFrom(0x202e, 0x2066, 0x200e)).map((code) => String.fromCharCode(code))

/** Inserts a control character somewhere in a text. */
const withControl = (text: fc.Arbitrary<string>): fc.Arbitrary<string> =>
  fc.tuple(text, controlCharacter, fc.nat()).map(([base, control, at]) => base.slice(0, at % (base.length + 1)) + control + base.slice(at % (base.length + 1)))

const emailArbitrary = fc.oneof(
  { weight: 3, arbitrary: fc.constantFrom('fuzz@example.com', 'FUZZ@Example.com ', 'someone@example.com', 'a@b.io') },
  { weight: 2, arbitrary: fc.emailAddress() },
  { weight: 4, arbitrary: withControl(fc.constantFrom('fuzz@example.com', 'a@b.io', 'someone@example.com')) },
  { weight: 2, arbitrary: wildString },
  { weight: 1, arbitrary: fc.constantFrom('', ' ', 'x'.repeat(400), 'a%00b@x.io', 'a@b\u00a0.io', '\u202e@x.io') }
)
const passwordArbitrary = fc.oneof(
  { weight: 3, arbitrary: fc.constantFrom(PORTAL_PASSWORD, 'another long password', 'short') },
  { weight: 4, arbitrary: withControl(fc.constantFrom(PORTAL_PASSWORD, 'another long password', '')) },
  { weight: 2, arbitrary: unicodeString(30) },
  { weight: 1, arbitrary: fc.constantFrom('', 'x'.repeat(1025), `${'é'.repeat(11)}\u0301`) }
)
const labelArbitrary = fc.oneof(
  { weight: 3, arbitrary: fc.constantFrom('laptop', '', '  ', 'x'.repeat(101), '<img src=x onerror=alert(1)>') },
  { weight: 4, arbitrary: withControl(fc.constantFrom('laptop', '', 'ci')) },
  { weight: 3, arbitrary: wildString }
)

/** Any text without control characters (those are tried in the label, whose refusal names it). */
const printable = wildString.filter((text) => !refusedText(['scopes', text]))
/** The create form's scope checkboxes: mostly what a browser sends (one or both), sometimes none or ones no browser would. */
const scopesArbitrary = fc.oneof(
  { weight: 8, arbitrary: fc.constantFrom(['animals:read', 'animals:write'], ['animals:read'], ['animals:write']) },
  { weight: 2, arbitrary: fc.array(fc.oneof(fc.constantFrom('animals:read', 'animals:write', 'animals:delete', '', 'ANIMALS:READ', 'animals:read animals:write'), printable), { maxLength: 4 }) }
)
/** The create form's expiry choice: mostly one of its options, sometimes absent or anything at all. */
const expiryArbitrary = fc.oneof(
  { weight: 8, arbitrary: fc.constantFrom('never', '7d', '30d', '90d', '365d') },
  { weight: 2, arbitrary: fc.oneof(fc.constant(undefined), fc.constantFrom('0', '-1d', '99999999d', '1x', '30d30d'), printable) }
)

/** How the form body is written: cleanly, as a browser would, or damaged in the ways a hostile client may. */
type FormShape = 'clean' | 'repeated' | 'bad-escape' | 'invalid-utf8' | 'oversized'
const formShape = fc.oneof(
  { weight: 12, arbitrary: fc.constant<FormShape>('clean') },
  { weight: 1, arbitrary: fc.constantFrom<FormShape>('repeated', 'bad-escape', 'invalid-utf8', 'oversized') }
)
const PORTAL_CONTENT_TYPES = ['application/x-www-form-urlencoded', 'application/x-www-form-urlencoded; charset=UTF-8', 'application/json', 'text/plain', 'multipart/form-data; boundary=x', undefined]
const portalContentType = fc.oneof(
  { weight: 14, arbitrary: fc.constant(PORTAL_CONTENT_TYPES[0]) },
  { weight: 1, arbitrary: fc.constantFrom(...PORTAL_CONTENT_TYPES) }
)
const csrfChoice = fc.oneof({ weight: 10, arbitrary: fc.constant('valid' as const) }, { weight: 1, arbitrary: fc.constantFrom('missing' as const, 'wrong' as const) })

function formBody (fields: Array<[string, string]>, shape: FormShape, style: 'minimal' | 'all' | 'all-lower' | 'plus', damage: number): Buffer {
  const pairs = fields.map(([name, value]) => `${name}=${encodeComponent(value, style)}`)
  if (shape === 'repeated' && pairs.length > 1) pairs.push(pairs[1 + (damage % (pairs.length - 1))] ?? '')
  let text = pairs.join('&')
  if (shape === 'bad-escape') text += `&${fields[1]?.[0] ?? 'x'}=${BAD_ESCAPES[damage % BAD_ESCAPES.length] ?? '%'}`
  if (shape === 'oversized') text += `&pad=${'a'.repeat(17 * 1024)}`
  const bytes = Buffer.from(text, 'latin1')
  if (shape !== 'invalid-utf8') return bytes
  return Buffer.concat([bytes, Buffer.from('&x='), Buffer.from(INVALID_UTF8[damage % INVALID_UTF8.length] ?? [0xff])])
}

interface PortalFuzz {
  /** The portal needs no API document: the forms are not in it. */
  fz: TestApp
  /** A browser with a session of the account fuzz@example.com (password PORTAL_PASSWORD) and keys to revoke. */
  cookie: string
  sessionToken: string
  presessionCookie: string
  presessionToken: string
  keyIds: string[]
  otherKeyId: string
  accountId: number
}

async function portalFuzz (t: TestContext): Promise<PortalFuzz> {
  const fz = await buildTestApp(t, FUZZ_ENV)
  const browser = new PortalClient(fz.app, '203.0.113.200')
  // Sign-up itself is among the forms fuzzed; the account whose forms are posted needs no real one.
  await browser.signedUpAs(fz.store, 'fuzz@example.com')
  const keyIds: string[] = []
  for (const label of ['one', 'two', 'three']) {
    await browser.generateKey(label)
  }
  const account = await fz.store.accounts.findByEmail('fuzz@example.com')
  assert.ok(account)
  keyIds.push(...(await fz.store.apiKeys.listByAccount(account.id)).map((row) => row.id))
  const other = await fz.store.accounts.findByEmail('test@example.com')
  const [otherKey] = await fz.store.apiKeys.listByAccount(other?.id ?? 0)
  const keysPage = await browser.get('/portal/keys')
  const stranger = new PortalClient(fz.app, '203.0.113.201')
  const loginPage = await stranger.get('/portal/login')
  const cookieOf = (client: PortalClient): string => [...client.cookies].map(([name, value]) => `${name}=${value}`).join('; ')
  return {
    fz,
    cookie: cookieOf(browser),
    sessionToken: csrfTokenOf(keysPage.body.slice(keysPage.body.indexOf('action="/portal/keys"'))),
    presessionCookie: cookieOf(stranger),
    presessionToken: csrfTokenOf(loginPage.body),
    keyIds,
    otherKeyId: otherKey?.id ?? 'key_0000000000000000',
    accountId: account.id
  }
}

interface PortalCase {
  form: PortalForm
  fields: Array<[string, string]>
  shape: FormShape
  style: 'minimal' | 'all' | 'all-lower' | 'plus'
  damage: number
  contentType: string | undefined
  csrf: 'valid' | 'missing' | 'wrong'
  address: number
  keyId?: string
}

function portalCaseArbitrary (pf: PortalFuzz, form: PortalForm): fc.Arbitrary<PortalCase> {
  const fieldsOf: Record<PortalForm, fc.Arbitrary<Array<[string, string]>>> = {
    signup: fc.tuple(emailArbitrary, passwordArbitrary).map(([email, password]) => [['email', email], ['password', password]]),
    login: fc.tuple(emailArbitrary, passwordArbitrary).map(([email, password]) => [['email', email], ['password', password]]),
    generateKey: fc.tuple(labelArbitrary, scopesArbitrary, expiryArbitrary).map(([label, scopes, expiry]) =>
      [['label', label], ...scopes.map((scope): [string, string] => ['scopes', scope]), ...(expiry === undefined ? [] : [['expires_in', expiry] as [string, string]])]),
    revokeKey: fc.constant([])
  }
  const keyId = fc.oneof(
    { weight: 4, arbitrary: fc.constantFrom(...pf.keyIds) },
    { weight: 1, arbitrary: fc.constantFrom(pf.otherKeyId, 'key_0000000000000000', 'key_short', '%00', '..', 'key_%00aaaaaaaaaaaaaa', `key_${'a'.repeat(200)}`) },
    { weight: 1, arbitrary: wildString.map((text) => encodeURIComponent(text.replace(/[\ud800-\udfff]/g, 'x')) || 'x') }
  )
  return fc.record({
    form: fc.constant(form),
    fields: fieldsOf[form],
    shape: formShape,
    style: encodingStyle,
    damage: fc.nat(),
    contentType: portalContentType,
    csrf: csrfChoice,
    address: fc.integer({ min: 1, max: 6 }),
    keyId
  })
}

async function runPortalCase (pf: PortalFuzz, item: PortalCase): Promise<void> {
  const session = item.form === 'generateKey' || item.form === 'revokeKey'
  const token = session ? pf.sessionToken : pf.presessionToken
  const csrf: Array<[string, string]> = item.csrf === 'missing' ? [] : [['_csrf', item.csrf === 'valid' ? token : `${token.slice(0, -2)}xx`]]
  const payload = formBody([...csrf, ...item.fields], item.shape, item.style, item.damage)
  const url = item.form === 'revokeKey' ? `/portal/keys/${item.keyId ?? ''}/revoke` : item.form === 'generateKey' ? '/portal/keys' : `/portal/${item.form}`
  const headers: Record<string, string> = { cookie: session ? pf.cookie : pf.presessionCookie, ...(item.contentType !== undefined && { 'content-type': item.contentType }) }
  countRequest()
  const response = await pf.fz.app.inject({ method: 'POST', url, headers, payload, remoteAddress: `198.51.100.${item.address}` })
  const context = `[portal ${item.form}, ${item.shape}, ${item.style}, csrf ${item.csrf}, ${String(item.contentType)}] POST ${url}\n  fields: ${JSON.stringify(item.fields)}\n  → ${response.statusCode} ${response.body.slice(0, 600)}\n  (${REPLAY})`
  assertPrototypesUnchanged(context)
  assert.ok(response.statusCode < 500, `5xx from the portal:\n${context}`)
  const allowed = [...FORM_STATUSES[item.form], ...(item.form === 'revokeKey' ? [400] : [])]
  assert.ok(allowed.includes(response.statusCode), `status not in ${allowed.join(', ')}:\n${context}`)
  if (response.statusCode !== 303) assert.match(String(response.headers['content-type']), HTML_TYPE, context)
  // A form that was read as sent, with its token: a control character in any of its fields is named.
  const read = item.shape === 'clean' && item.csrf === 'valid' && item.contentType?.startsWith('application/x-www-form-urlencoded') === true
  const control = item.fields.find(refusedText)
  if (read && control !== undefined && item.form !== 'revokeKey') {
    assert.equal(response.statusCode, 400, `a control character in ${control[0]} was not refused:\n${context}`)
    assert.match(response.body, new RegExp(`The ${FIELD_NAMES[control[0]] ?? control[0]} must not contain (control|bidirectional formatting) characters`), context)
  }
}

// Each form's runs have an app of their own: they run side by side.
describe('fuzzing the developer portal\'s forms', { concurrency: true }, () => {
  for (const form of PORTAL_FORMS) {
    test(`POST ${form}: never a 5xx, always an HTML page with a status of the form's own, a control character refused naming its field`, { timeout: 300_000 }, async (t) => {
      const pf = await portalFuzz(t)
      const seed = (SEED + 100 + PORTAL_FORMS.indexOf(form)) | 0
      const numRuns = Math.max(20, Math.round(PORTAL_RUNS * PORTAL_SHARES[form]))
      t.diagnostic(`portal ${form}: ${numRuns} runs, fast-check seed ${seed} (${REPLAY})`)
      await fc.assert(fc.asyncProperty(portalCaseArbitrary(pf, form), async (item) => { await runPortalCase(pf, item) }), { seed, numRuns, includeErrorInReport: true })
      const labels = (await pf.fz.store.apiKeys.listByAccount(pf.accountId)).map((row) => row.label ?? '')
      assert.deepEqual(labels.filter((label) => refusedText(['label', label])), [], 'no stored label holds a control character')
      for (const email of ['fuzz@example.com', 'someone@example.com', 'a@b.io']) {
        const account = await pf.fz.store.accounts.findByEmail(email)
        assert.ok(account === undefined || !refusedText(['email', account.email]))
      }
    })
  }
})

testPrototypesUnchanged()
