import { createCipheriv, createDecipheriv, createHmac, randomBytes } from 'node:crypto'
import type { FastifyReply, FastifyRequest } from 'fastify'
import { PRESESSION_COOKIE } from './csrf.js'
import { cookieOptions, type CookiePolicy } from './session.js'

export const SECOND_STEP_COOKIE = 'portal_second_step'
/** The code must follow the password soon: a half-done log-in is not kept. */
export const SECOND_STEP_WITHIN_MS = 5 * 60_000
const IV_BYTES = 12
const TAG_BYTES = 16

/** A log-in whose password was right, waiting for its code; the device cookie is given once the code is. */
export interface PendingLogIn { accountId: number, deviceCookie: string }

/**
 * Carries a log-in half done (password checked, code not yet) from the password form to the
 * code form, as NewKeyCookie carries a new key: sealed with AES-256-GCM under a key derived
 * from the browser's presession nonce, so it opens in that browser only, for a few minutes,
 * on every instance. It holds no secret of the account; it only says whose password was right.
 */
export class SecondStepCookie {
  constructor (private readonly secret: string, private readonly policy: CookiePolicy) {}

  private sealingKey (request: FastifyRequest): Buffer | undefined {
    const nonce = request.cookies[PRESESSION_COOKIE]
    return nonce === undefined ? undefined : createHmac('sha256', this.secret).update(`second step\0${nonce}`).digest()
  }

  put (request: FastifyRequest, reply: FastifyReply, pending: PendingLogIn): void {
    const key = this.sealingKey(request)
    if (key === undefined) return
    const iv = randomBytes(IV_BYTES)
    const cipher = createCipheriv('aes-256-gcm', key, iv)
    const sealed = Buffer.concat([cipher.update(JSON.stringify({ ...pending, until: Date.now() + SECOND_STEP_WITHIN_MS })), cipher.final()])
    const value = Buffer.concat([iv, cipher.getAuthTag(), sealed]).toString('base64url')
    reply.setCookie(SECOND_STEP_COOKIE, value, { ...cookieOptions(request, this.policy), maxAge: SECOND_STEP_WITHIN_MS / 1000 })
  }

  /** The pending log-in, while it is fresh; it stays until cleared, so a mistyped code can be typed again. */
  read (request: FastifyRequest): PendingLogIn | undefined {
    const value = request.cookies[SECOND_STEP_COOKIE]
    const key = this.sealingKey(request)
    if (value === undefined || key === undefined) return undefined
    const bytes = Buffer.from(value, 'base64url')
    if (bytes.length <= IV_BYTES + TAG_BYTES) return undefined
    try {
      const decipher = createDecipheriv('aes-256-gcm', key, bytes.subarray(0, IV_BYTES))
      decipher.setAuthTag(bytes.subarray(IV_BYTES, IV_BYTES + TAG_BYTES))
      const opened = JSON.parse(Buffer.concat([decipher.update(bytes.subarray(IV_BYTES + TAG_BYTES)), decipher.final()]).toString('utf8')) as PendingLogIn & { until: number }
      return opened.until > Date.now() ? { accountId: opened.accountId, deviceCookie: opened.deviceCookie } : undefined
    } catch {
      // Another browser's cookie, a tampered one: no log-in is pending.
      return undefined
    }
  }

  clear (request: FastifyRequest, reply: FastifyReply): void {
    reply.clearCookie(SECOND_STEP_COOKIE, cookieOptions(request, this.policy))
  }
}
