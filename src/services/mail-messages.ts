import { escapeHtml } from '../core/html.js'
import { RESET_TOKEN_TTL_MS, VERIFY_TOKEN_TTL_MS } from '../core/link-tokens.js'
import { spanText } from '../core/span-text.js'
import type { NewMail } from '../storage/store.js'

/** Where the links of messages point: the portal's public origin. */
export interface MailLinks {
  /** Absolute, without a trailing slash: `https://store.example.com`. */
  base: string
}

/**
 * The portal's public address for links in mail: PUBLIC_BASE_URL without its `/v1`, or the local
 * address the server listens on. Never the request's Host header, which a client chooses.
 */
export function mailLinksOf (config: { publicBaseUrl: string | undefined, port: number }): MailLinks {
  if (config.publicBaseUrl !== undefined) return { base: config.publicBaseUrl.replace(/\/v1\/?$/, '').replace(/\/+$/, '') }
  return { base: `http://localhost:${config.port === 0 ? 8080 : config.port}` }
}

interface MessageParts {
  recipient: string
  kind: string
  subject: string
  /** Sentences before the link, each a paragraph. */
  lines: readonly string[]
  /** What the link does, as its text in the HTML part. */
  action: string
  link: string
  /** A sentence after the link. */
  footer: string
}

/** A message with a plain-text and an HTML part saying the same; the link is the one thing in it to act on. */
export function message (parts: MessageParts): NewMail {
  const text = [...parts.lines, '', `${parts.action}:`, parts.link, '', parts.footer, '', '— Animal Store'].join('\n')
  const paragraphs = parts.lines.map((line) => `<p>${escapeHtml(line)}</p>`).join('\n')
  const html = `<!doctype html>
<html lang="en"><head><meta charset="utf-8"><title>${escapeHtml(parts.subject)}</title></head>
<body>
${paragraphs}
<p><a href="${escapeHtml(parts.link)}">${escapeHtml(parts.action)}</a></p>
<p>${escapeHtml(parts.footer)}</p>
<p>— Animal Store</p>
</body></html>
`
  return { recipient: parts.recipient, subject: parts.subject, text, html, link: parts.link, kind: parts.kind }
}

const NOT_YOU_KEYS = 'If this was not you, log in and revoke the key, then reset your password.'
const NOT_YOU_PASSWORD = 'If this was not you, reset your password now: someone else may know it.'

const when = (at: Date, address: string | undefined): string =>
  `at ${at.toISOString().replace('T', ' ').slice(0, 19)} UTC${address === undefined ? '' : ` from the address ${address}`}`

export function verificationMail (links: MailLinks, recipient: string, token: string): NewMail {
  return message({
    recipient,
    kind: 'verify_email',
    subject: 'Verify your email address for Animal Store',
    lines: ['Someone signed up for the Animal Store developer portal with this email address.', `Verify it to generate API keys. The link works once, for ${spanText(VERIFY_TOKEN_TTL_MS)}.`],
    action: 'Verify your email address',
    link: `${links.base}/portal/verify?token=${token}`,
    footer: 'If you did not sign up, ignore this message: nothing happens without the link.'
  })
}

export function resetMail (links: MailLinks, recipient: string, token: string): NewMail {
  return message({
    recipient,
    kind: 'reset_password',
    subject: 'Reset your Animal Store password',
    lines: ['Someone asked to reset the password of the Animal Store developer portal account with this email address.', `The link works once, for ${spanText(RESET_TOKEN_TTL_MS)}.`],
    action: 'Choose a new password',
    link: `${links.base}/portal/reset?token=${token}`,
    footer: 'If you did not ask, ignore this message: your password stays as it is.'
  })
}

/** To the owner of an account when someone signs up with its email: the sign-up page answers the same either way. */
export function signUpAttemptMail (links: MailLinks, recipient: string): NewMail {
  return message({
    recipient,
    kind: 'sign_up_existing',
    subject: 'Someone tried to sign up to Animal Store with your email address',
    lines: [
      'Someone tried to sign up for the Animal Store developer portal with this email address, which already has an account. No second account was made.',
      'If it was you, log in instead; if you forgot your password, choose a new one from the log-in page.'
    ],
    action: 'Log in',
    link: `${links.base}/portal/login`,
    footer: 'If it was not you, ignore this message: your account is unchanged.'
  })
}

export type SecurityEvent =
  | { type: 'key_created', keyId: string, label: string | null }
  | { type: 'key_rolled', keyId: string, successorId: string }
  | { type: 'key_expiring', keyId: string, label: string | null, expiresAt: Date }
  | { type: 'password_changed' }
  | { type: 'password_reset' }
  | { type: 'two_step_enabled' }
  | { type: 'two_step_disabled' }

const named = (keyId: string, label: string | null): string => (label === null ? keyId : `${keyId} (“${label}”)`)

/** What each security message says, and where its link points. */
function securityParts (event: SecurityEvent, at: Date, address: string | undefined): Pick<MessageParts, 'subject' | 'lines' | 'action' | 'footer'> & { path: string } {
  switch (event.type) {
    case 'key_created':
      return { subject: 'A new API key was created on your Animal Store account', lines: [`The API key ${named(event.keyId, event.label)} was created ${when(at, address)}.`], action: 'See your keys', path: '/portal/keys', footer: NOT_YOU_KEYS }
    case 'key_rolled':
      return { subject: 'An API key was rolled on your Animal Store account', lines: [`The API key ${event.keyId} was rolled ${when(at, address)}: ${event.successorId} replaces it.`], action: 'See your keys', path: '/portal/keys', footer: NOT_YOU_KEYS }
    case 'key_expiring':
      return {
        subject: 'An Animal Store API key expires in 7 days',
        lines: [`The API key ${named(event.keyId, event.label)} expires at ${event.expiresAt.toISOString().replace('T', ' ').slice(0, 19)} UTC.`, 'Roll it before then to keep your integration working.'],
        action: 'See your keys',
        path: '/portal/keys',
        footer: 'This is the only reminder for this key.'
      }
    case 'password_changed':
      return { subject: 'Your Animal Store password was changed', lines: [`The password of your developer portal account was changed ${when(at, address)}.`], action: 'Reset your password', path: '/portal/forgot', footer: NOT_YOU_PASSWORD }
    case 'password_reset':
      return { subject: 'Your Animal Store password was reset', lines: [`The password of your developer portal account was reset through a mailed link ${when(at, address)}. Every session was signed out.`], action: 'Reset your password', path: '/portal/forgot', footer: NOT_YOU_PASSWORD }
    case 'two_step_enabled':
    case 'two_step_disabled':
      return {
        subject: `Two-step verification was turned ${event.type === 'two_step_enabled' ? 'on' : 'off'} for your Animal Store account`,
        lines: [`Two-step verification was turned ${event.type === 'two_step_enabled' ? 'on' : 'off'} ${when(at, address)}.`],
        action: 'Reset your password',
        path: '/portal/forgot',
        footer: NOT_YOU_PASSWORD
      }
  }
}

/** The message telling an account's owner of a change to its security: never a key or a password, only what changed, when and from where. */
export function securityMail (links: MailLinks, recipient: string, event: SecurityEvent, at: Date, address?: string): NewMail {
  const { path, ...parts } = securityParts(event, at, address)
  return message({ recipient, kind: event.type, link: `${links.base}${path}`, ...parts })
}
