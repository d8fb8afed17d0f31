const EMAIL = /^[^\s@]+@[^\s@]+\.[^\s@]+$/
const MAX_EMAIL_LENGTH = 254
export const MAX_LABEL_LENGTH = 100
export const MAX_NAME_LENGTH = 200

/** The texts a person gives the portal or the CLI, by the name a refusal gives them. */
export type TextField = 'email' | 'name' | 'label' | 'password' | 'scopes' | 'duration' | 'expiry' | 'code'

const FIELD_NAMES: Readonly<Record<TextField, string>> = { email: 'email address', name: 'name', label: 'label', password: 'password', scopes: 'scopes', duration: 'duration', expiry: 'expiry', code: 'code' }

/**
 * What no text may hold, as the inside of a regular-expression character class. C0 controls, DEL
 * and C1 controls: no one types them, PostgreSQL refuses NUL in text, and the others (U+0085 "next
 * line" among them) corrupt logs and terminals.
 */
export const CONTROL_CHARACTERS = '\\u0000-\\u001F\\u007F-\\u009F'

/**
 * Bidirectional embeddings, overrides (U+202A to U+202E) and isolates (U+2066 to U+2069): they
 * reorder what a person sees ("Trojan Source"), so no text may hold them.
 */
export const BIDI_REORDERING = '\\u202A-\\u202E\\u2066-\\u2069'

/**
 * The bidirectional marks (U+061C, U+200E, U+200F): right-to-left free text needs them, but an
 * identifier or a label an operator reads does not, and they let one display as another.
 */
const BIDI_MARKS = '\\u061C\\u200E\\u200F'

/** In words, what every text refuses: for messages and documents that describe CONTROL_CHARACTERS and BIDI_REORDERING. */
export const REFUSED_IN_TEXT = 'control characters (U+0000 to U+001F, U+007F to U+009F) or bidirectional overrides, embeddings and isolates (U+202A to U+202E, U+2066 to U+2069)'

const CONTROL_CHARACTER = new RegExp(`[${CONTROL_CHARACTERS}]`)
const BIDI_CONTROL = new RegExp(`[${BIDI_REORDERING}${BIDI_MARKS}]`)
const BIDI_OVERRIDE = new RegExp(`[${BIDI_REORDERING}]`)
const ANY_REFUSED = new RegExp(`[${CONTROL_CHARACTERS}${BIDI_REORDERING}${BIDI_MARKS}]`, 'g')

/**
 * The bidirectional controls each field refuses beyond CONTROL_CHARACTER. Identifiers and labels
 * refuse them all; a person's name is free text and keeps the marks; a password is never shown,
 * so it refuses controls only.
 */
const BIDI_REFUSED: Readonly<Record<TextField, RegExp | undefined>> = {
  email: BIDI_CONTROL, label: BIDI_CONTROL, scopes: BIDI_CONTROL, duration: BIDI_CONTROL, expiry: BIDI_CONTROL, code: BIDI_CONTROL, name: BIDI_OVERRIDE, password: undefined
}

function codeOf (character: string): string {
  return (character.codePointAt(0) ?? 0).toString(16).toUpperCase().padStart(4, '0')
}

/**
 * Why a text given for the field cannot be accepted because of what it contains, as a sentence
 * naming the field and the character; undefined when it holds nothing the field refuses. Every
 * text the portal and the CLI accept passes here before anything else looks at it.
 */
export function controlCharacterProblem (field: TextField, text: string): string | undefined {
  const control = CONTROL_CHARACTER.exec(text)
  if (control !== null) return `The ${FIELD_NAMES[field]} must not contain control characters (it contains U+${codeOf(control[0])}).`
  const bidi = BIDI_REFUSED[field]?.exec(text)
  if (bidi == null) return undefined
  return `The ${FIELD_NAMES[field]} must not contain bidirectional formatting characters (it contains U+${codeOf(bidi[0])}).`
}

/** The canonical form of an email address (trimmed, lower-cased), or undefined when it is not one. */
export function normalizeEmail (text: string): string | undefined {
  if (controlCharacterProblem('email', text) !== undefined) return undefined
  const email = text.trim().toLowerCase()
  return email.length <= MAX_EMAIL_LENGTH && EMAIL.test(email) ? email : undefined
}

/** The text without any character a field refuses: for showing back what was typed, never for storing it. */
export function withoutControlCharacters (text: string): string {
  return text.replace(ANY_REFUSED, '')
}
