import { controlCharacterProblem } from '../core/accounts.js'

/** An option of a portal <select>: the value the form sends and the words it shows. */
export interface Choice { value: string, text: string }

/** The choices of the create form's expiry: values for expiryOrFail's `expiresIn` ("never" for none). */
export const EXPIRY_CHOICES: readonly Choice[] = [
  { value: 'never', text: 'Never' },
  { value: '7d', text: 'In 7 days' },
  { value: '30d', text: 'In 30 days' },
  { value: '90d', text: 'In 90 days' },
  { value: '365d', text: 'In 1 year' }
]
export const DEFAULT_EXPIRY_CHOICE = 'never'

/** The choices of the roll form's grace period: values for durationOrFail. */
export const GRACE_CHOICES: readonly Choice[] = [
  { value: '0', text: 'None: the old key stops working at once' },
  { value: '1h', text: '1 hour' },
  { value: '24h', text: '24 hours' },
  { value: '7d', text: '7 days' }
]
export const DEFAULT_GRACE_CHOICE = '24h'

export const isOffered = (choices: readonly Choice[], value: string): boolean => choices.some((choice) => choice.value === value)

/**
 * Why a value sent for a <select> is refused, or undefined when the form offers it. A tampered
 * form may send any text; only what the page offers is accepted, so a value the page never
 * showed (a key that lasts a second, or ten years) cannot be made by editing the form.
 */
export function choiceProblem (choices: readonly Choice[], value: string, what: string): string | undefined {
  if (isOffered(choices, value)) return undefined
  return controlCharacterProblem('duration', value) ??
    `Choose ${what} from the list the form offers: ${choices.map(({ text }) => text.replace(/:.*$/, '')).join(', ')}.`
}
