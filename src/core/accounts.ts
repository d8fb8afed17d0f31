const EMAIL = /^[^\s@]+@[^\s@]+\.[^\s@]+$/
const MAX_EMAIL_LENGTH = 254
export const MAX_LABEL_LENGTH = 100

/** The canonical form of an email address (trimmed, lower-cased), or undefined when it is not one. */
export function normalizeEmail (text: string): string | undefined {
  const email = text.trim().toLowerCase()
  return email.length <= MAX_EMAIL_LENGTH && EMAIL.test(email) ? email : undefined
}
