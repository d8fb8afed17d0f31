import { REFUSED_IN_TEXT } from '../core/accounts.js'

/** Turns the first schema violation into a sentence a client developer can act on. */
export interface SchemaViolation {
  keyword: string
  instancePath: string
  params: Record<string, unknown>
  parentSchema?: { properties?: Record<string, unknown> }
  message?: string
}

export type ValidationContext = 'body' | 'querystring' | 'params' | 'headers' | string

export function validationMessage (violation: SchemaViolation, context: ValidationContext): string {
  const path = violation.instancePath.split('/').slice(1).map(unescapePointer)
  const subject = subjectOf(path, context)
  const params = violation.params
  switch (violation.keyword) {
    case 'required':
      return `${subjectOf([...path, String(params.missingProperty)], context)} is required`
    case 'additionalProperties': {
      const allowed = Object.keys(violation.parentSchema?.properties ?? {})
      return `unknown field ${JSON.stringify(params.additionalProperty)}` + (path.length > 0 ? ` in ${path.join('.')}` : '') +
        (allowed.length > 0 ? `: the allowed fields are ${allowed.join(', ')}` : '')
    }
    case 'type':
      return `${subject} must be ${article(String(params.type))}`
    case 'format':
      return params.format === 'int64'
        ? `${subject} must be an integer between -9223372036854775808 and 9223372036854775807`
        : `${subject} must be a valid ${String(params.format)}`
    case 'minLength':
      return `${subject} must be at least ${String(params.limit)} character${params.limit === 1 ? '' : 's'} long`
    case 'maxLength':
      return `${subject} must be at most ${String(params.limit)} characters long`
    case 'pattern':
      return `${subject} must not contain ${REFUSED_IN_TEXT}, or unpaired surrogates`
    case 'enum':
      return `${subject} must be one of ${(params.allowedValues as unknown[]).join(', ')}`
    case 'minimum':
      return `${subject} must be at least ${String(params.limit)}`
    case 'maximum':
      return `${subject} must be at most ${String(params.limit)}`
    default:
      return `${subject} ${violation.message ?? 'is invalid'}`
  }
}

function subjectOf (path: string[], context: ValidationContext): string {
  if (path.length === 0) return context === 'body' ? 'the request body' : `the ${context}`
  const name = path.join('.')
  if (context === 'querystring') return `query parameter ${name}`
  if (context === 'params') return `path parameter ${name}`
  return name
}

function article (type: string): string {
  const types = type.split(',')
  const named = types.map((one) => (one === 'object' ? 'a JSON object' : one === 'array' ? 'an array' : one === 'integer' ? 'an integer' : `a ${one}`))
  return named.join(' or ')
}

function unescapePointer (segment: string): string {
  return segment.replace(/~1/g, '/').replace(/~0/g, '~')
}
