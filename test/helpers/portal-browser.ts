import { randomBytes } from 'node:crypto'
import assert from 'node:assert/strict'
import { eventually } from './eventually.js'

/** A portal answer as a browser sees it. */
export interface Answer { status: number, headers: Headers, body: string }

/**
 * A browser on the portal over a real socket: keeps its cookies, fills forms with their CSRF
 * token, and speaks from one client address through X-Forwarded-For (the server must trust the
 * loopback proxy: TRUST_PROXY=loopback).
 */
export class Browser {
  readonly cookies = new Map<string, string>()
  constructor (private readonly baseUrl: string, readonly address: string) {}

  private headers (extra: Record<string, string> = {}): Record<string, string> {
    const cookie = [...this.cookies].map(([name, value]) => `${name}=${value}`).join('; ')
    return { 'x-forwarded-for': this.address, ...(cookie === '' ? {} : { cookie }), ...extra }
  }

  private keep (response: Response): void {
    for (const line of response.headers.getSetCookie()) {
      const [pair = ''] = line.split(';')
      const name = pair.slice(0, pair.indexOf('='))
      if (/;\s*Max-Age=0/i.test(line)) this.cookies.delete(name)
      else this.cookies.set(name, pair.slice(name.length + 1))
    }
  }

  async get (path: string): Promise<Answer> {
    const response = await fetch(this.baseUrl + path, { headers: this.headers(), redirect: 'manual' })
    this.keep(response)
    return { status: response.status, headers: response.headers, body: await response.text() }
  }

  /** Posts the fields url-encoded; a field given as a list is sent once per value, as a tampered form may. */
  async post (path: string, fields: Record<string, string | readonly string[]>, extra: Record<string, string> = {}): Promise<Answer> {
    const body = new URLSearchParams()
    for (const [name, value] of Object.entries(fields)) for (const item of typeof value === 'string' ? [value] : value) body.append(name, item)
    const response = await fetch(this.baseUrl + path, {
      method: 'POST',
      headers: this.headers({ 'content-type': 'application/x-www-form-urlencoded', ...extra }),
      body: body.toString(),
      redirect: 'manual'
    })
    this.keep(response)
    return { status: response.status, headers: response.headers, body: await response.text() }
  }

  /** The CSRF token of the page's form posting to `action` (the first form when none is named). */
  async token (page: string, action?: string): Promise<string> {
    const body = (await this.get(page)).body
    const from = action === undefined ? 0 : Math.max(0, body.indexOf(`action="${action}"`))
    return /<input type="hidden" name="_csrf" value="([^"]+)">/.exec(body.slice(from))?.[1] ?? ''
  }

  async submit (page: string, action: string, fields: Record<string, string | readonly string[]>): Promise<Answer> {
    return this.post(action, { _csrf: await this.token(page, action), ...fields })
  }
}

/**
 * Signs up and logs in, as a person does: the sign-up answers "check your email" (200) and makes the
 * account just after its answer, so the log-in is tried until the account is there (401 before it).
 * The email stays unverified. Answers the log-in (303 to the keys page).
 */
export async function signUpAndLogIn (browser: Browser, email: string, password: string): Promise<Answer> {
  const signedUp = await browser.submit('/portal/signup', '/portal/signup', { email, password })
  assert.equal(signedUp.status, 200, signedUp.body)
  assert.match(signedUp.body, /<h1>Check your email<\/h1>/)
  return await eventually(async () => {
    const loggedIn = await browser.submit('/portal/login', '/portal/login', { email, password })
    assert.equal(loggedIn.status, 303, loggedIn.body)
    return loggedIn
  }, { timeout: 30_000, interval: 100 })
}

/**
 * What the outside attack did to the password-hash queue: each address, on a connection of its
 * own, posts sign-ups of fresh emails back to back, and tries again at once on every 429,
 * until `stop` is aborted. `refused` settles at the first 429 (the queue is full: the flood is
 * under way); `done` once every address has stopped, with every status the flood got.
 */
export function floodSignUps (baseUrl: string, addresses: readonly string[], password: string, stop: AbortSignal): { refused: Promise<void>, done: Promise<number[]> } {
  const statuses: number[] = []
  let onRefused = (): void => {}
  const refused = new Promise<void>((resolve) => { onRefused = resolve })
  const done = Promise.all(addresses.map(async (address) => {
    const attacker = new Browser(baseUrl, address)
    let token = ''
    while (!stop.aborted) {
      if (token === '') token = await attacker.token('/portal/signup')
      const email = `flood-${randomBytes(6).toString('hex')}@attack.example`
      const answer = await attacker.post('/portal/signup', { _csrf: token, email, password })
      statuses.push(answer.status)
      if (answer.status === 429) onRefused()
      // Signed up: a new form fetched, as a script creating accounts would (the accepted form's token is spent).
      if (answer.status === 200) {
        attacker.cookies.clear()
        token = ''
      }
    }
  })).then(() => statuses)
  return { refused, done }
}

/** How a patient log-in went: the last answer, the 429s met and the waits they asked for, and the time it all took. */
export interface PatientLogIn { status: number, message: string, refusals: number, toldToWaitMs: number, tookMs: number }

/**
 * A person logging in who honours Retry-After: on a 429 waits what it says, then submits the form
 * again, until logged in (303) or refused otherwise, or until a wait would pass the deadline.
 */
export async function patientLogIn (browser: Browser, email: string, password: string, deadlineMs: number): Promise<PatientLogIn> {
  const started = performance.now()
  let refusals = 0
  let toldToWaitMs = 0
  for (;;) {
    const answer = await browser.submit('/portal/login', '/portal/login', { email, password })
    const waitMs = answer.status === 429 ? Number(answer.headers.get('retry-after')) * 1000 : 0
    if (!(waitMs > 0) || performance.now() + waitMs > started + deadlineMs) {
      return { status: answer.status, message: messageOf(answer.body), refusals, toldToWaitMs, tookMs: Math.round(performance.now() - started) }
    }
    refusals++
    toldToWaitMs += waitMs
    // The wait the server asked for is the behaviour under test: a patient client sleeps exactly that long.
    await new Promise((resolve) => setTimeout(resolve, waitMs))
  }
}

/** The message the portal shows on a page. */
export const messageOf = (body: string): string => /<p class="message [a-z]+" [^>]*>([^<]*)<\/p>/.exec(body)?.[1] ?? ''
