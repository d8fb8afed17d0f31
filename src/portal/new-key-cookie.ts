import { createCipheriv, createDecipheriv, createHmac, randomBytes } from 'node:crypto'
import type { FastifyReply, FastifyRequest } from 'fastify'
import { cookieOptions, SESSION_COOKIE, type CookiePolicy } from './session.js'

export const NEW_KEY_COOKIE = 'portal_new_key'
/** The page that shows the secret is the redirect's target: it comes at once or not at all. */
const SHOW_WITHIN_MS = 5 * 60_000
const IV_BYTES = 12
const TAG_BYTES = 16

/** A key just generated (or made by rolling `replacesId`), with the secret its page shows once. */
export interface NewKey { key: string, keyId: string, replacesId?: string | undefined }

/**
 * Carries a new key's secret from the post that made it to the page that shows it
 * (post-redirect-get: reloading that page never posts the form again), and shows it once: the
 * page that opens the cookie clears it. The secret travels sealed with AES-256-GCM under a key
 * derived from the session's token, which only the browser holds (the database keeps its
 * digest), so nothing at rest on the server can open it, and it opens for that session only.
 * Every instance shares the sealing secret through the database, as for the CSRF cookie.
 */
export class NewKeyCookie {
  constructor (private readonly secret: string, private readonly policy: CookiePolicy) {}

  private sealingKey (request: FastifyRequest): Buffer | undefined {
    const token = request.cookies[SESSION_COOKIE]
    return token === undefined ? undefined : createHmac('sha256', this.secret).update(`new key\0${token}`).digest()
  }

  /** Hands the new key to the next page of this session. */
  put (request: FastifyRequest, reply: FastifyReply, newKey: NewKey): void {
    const key = this.sealingKey(request)
    if (key === undefined) return
    const iv = randomBytes(IV_BYTES)
    const cipher = createCipheriv('aes-256-gcm', key, iv)
    const sealed = Buffer.concat([cipher.update(JSON.stringify({ ...newKey, until: Date.now() + SHOW_WITHIN_MS })), cipher.final()])
    const value = Buffer.concat([iv, cipher.getAuthTag(), sealed]).toString('base64url')
    reply.setCookie(NEW_KEY_COOKIE, value, { ...cookieOptions(request, this.policy), maxAge: SHOW_WITHIN_MS / 1000 })
  }

  /** The new key handed over, once: the cookie is cleared whatever it held. */
  take (request: FastifyRequest, reply: FastifyReply): NewKey | undefined {
    const value = request.cookies[NEW_KEY_COOKIE]
    if (value === undefined) return undefined
    reply.clearCookie(NEW_KEY_COOKIE, cookieOptions(request, this.policy))
    const key = this.sealingKey(request)
    const bytes = Buffer.from(value, 'base64url')
    if (key === undefined || bytes.length <= IV_BYTES + TAG_BYTES) return undefined
    try {
      const decipher = createDecipheriv('aes-256-gcm', key, bytes.subarray(0, IV_BYTES))
      decipher.setAuthTag(bytes.subarray(IV_BYTES, IV_BYTES + TAG_BYTES))
      const opened = JSON.parse(Buffer.concat([decipher.update(bytes.subarray(IV_BYTES + TAG_BYTES)), decipher.final()]).toString('utf8')) as NewKey & { until: number }
      return opened.until > Date.now() ? { key: opened.key, keyId: opened.keyId, replacesId: opened.replacesId } : undefined
    } catch {
      // Another session's cookie, a tampered one: nothing to show.
      return undefined
    }
  }
}
