const EMAIL = /^[^\s@]+@[^\s@]+\.[^\s@]+$/
const MAX_EMAIL_LENGTH = 254
export const MAX_LABEL_LENGTH = 100
export const MAX_NAME_LENGTH = 200

/** The texts a person gives the portal or the CLI, by the name a refusal gives them. */
export type TextField = 'email' | 'name' | 'label' | 'password' | 'scopes' | 'duration' | 'expiry'

const FIELD_NAMES: Readonly<Record<TextField, string>> = { email: 'email address', name: 'name', label: 'label', password: 'password', scopes: 'scopes', duration: 'duration', expiry: 'expiry' }

/** C0 controls and DEL: no one types them, PostgreSQL refuses NUL in text, and the others corrupt logs and terminals. */
// eslint-disable-next-line no-control-regex -- matching control characters is the point
const CONTROL_CHARACTER = /[\u0000-\u001f\u007f]/

/**
 * Why a text given for the field cannot be accepted because of what it contains, as a sentence
 * naming the field; undefined when it has no control character. Every text the portal and the
 * CLI accept passes here before anything else looks at it.
 */
export function controlCharacterProblem (field: TextField, text: string): string | undefined {
  const found = CONTROL_CHARACTER.exec(text)
  if (found === null) return undefined
  const code = found[0].charCodeAt(0).toString(16).toUpperCase().padStart(4, '0')
  return `The ${FIELD_NAMES[field]} must not contain control characters (it contains U+${code}).`
}

/** The canonical form of an email address (trimmed, lower-cased), or undefined when it is not one. */
export function normalizeEmail (text: string): string | undefined {
  if (CONTROL_CHARACTER.test(text)) return undefined
  const email = text.trim().toLowerCase()
  return email.length <= MAX_EMAIL_LENGTH && EMAIL.test(email) ? email : undefined
}

/** The text with its control characters removed: for showing back what was typed, never for storing it. */
export function withoutControlCharacters (text: string): string {
  return text.replace(new RegExp(CONTROL_CHARACTER.source, 'g'), '')
}
