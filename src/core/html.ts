/** Markup that is already safe to send: built by `html`, never from raw request data. */
export class SafeHtml {
  constructor (readonly value: string) {}

  toString (): string {
    return this.value
  }
}

const ENTITIES: Record<string, string> = { '&': '&amp;', '<': '&lt;', '>': '&gt;', '"': '&quot;', "'": '&#39;', '`': '&#96;' }

/** Escapes text for an HTML text node or a quoted attribute value. */
export function escapeHtml (text: string): string {
  return text.replace(/[&<>"'`]/g, (character) => ENTITIES[character] ?? character)
}

function render (value: unknown): string {
  if (value instanceof SafeHtml) return value.value
  if (Array.isArray(value)) return value.map(render).join('')
  if (value === undefined || value === null || value === false) return ''
  return escapeHtml(String(value))
}

/**
 * A tagged template for pages: every interpolated value is escaped unless it is SafeHtml
 * (the result of another `html` call); arrays are rendered item by item; undefined,
 * null and false render as nothing. Attribute values must be quoted in the template.
 */
export function html (strings: TemplateStringsArray, ...values: unknown[]): SafeHtml {
  let out = strings[0] ?? ''
  for (let index = 0; index < values.length; index++) out += render(values[index]) + (strings[index + 1] ?? '')
  return new SafeHtml(out)
}
