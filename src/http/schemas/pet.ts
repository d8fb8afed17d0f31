import { Type, type Static } from 'typebox'
import { INT64_MAX, INT64_MIN } from '../../core/int64.js'
import { BIDI_REORDERING, CONTROL_CHARACTERS, REFUSED_IN_TEXT } from '../../core/accounts.js'
import { PAGE_SIZE } from '../../core/limits.js'
import { MAX_PET_ID, PET_STATUSES, type PetStatus } from '../../core/pets.js'

/**
 * The int64 range as JSON Schema numbers. A double holds -2^63 exactly and rounds 2^63 − 1 up to
 * 2^63, which bounds the same integers here: the body parser refuses anything outside int64
 * before validation, and the document is written with the exact digits (see openapi.ts).
 */
const INT64_MINIMUM = Number(INT64_MIN)
const INT64_MAXIMUM = Number(INT64_MAX)

export const PetStatusSchema = Type.Unsafe<PetStatus>({
  $id: 'PetStatus',
  type: 'string',
  enum: [...PET_STATUSES],
  description: 'Availability of the animal.',
  examples: ['available']
})

const PetStatusRef = Type.Unsafe<PetStatus>(Type.Ref('PetStatus'))

const nameField = Type.String({
  minLength: 1,
  maxLength: 200,
  // The text rules of src/core/accounts.ts and, matched in Unicode mode, no unpaired surrogates. The
  // bidirectional marks stay allowed: right-to-left names need them (docs/decisions.md).
  pattern: `^[^${CONTROL_CHARACTERS}${BIDI_REORDERING}\\uD800-\\uDFFF]*$`,
  description: "The animal's name: 1 to 200 characters (code points), kept exactly as sent; " +
    `${REFUSED_IN_TEXT} are not allowed (the bidirectional marks U+061C, U+200E and U+200F are).`
})

const categoryIdField = Type.Integer({
  format: 'int64',
  minimum: INT64_MINIMUM,
  maximum: INT64_MAXIMUM,
  description: 'Identifier of the category the animal belongs to: any integer in the int64 range, kept exactly (also beyond 2^53: ' +
    'parse responses with a lossless JSON parser to keep such values).',
  examples: [1]
})

const idField = Type.Integer({
  format: 'int64',
  minimum: 1,
  maximum: MAX_PET_ID,
  description: 'Unique identifier assigned on creation, from 1 to 2^53 − 1: a JSON number every client reads exactly.',
  examples: [1]
})

export const NewPetSchema = Type.Object({
  name: nameField,
  categoryId: categoryIdField,
  status: Type.Optional(PetStatusRef)
}, {
  $id: 'NewPet',
  additionalProperties: false,
  description: 'An animal to add. Exactly these fields; any other field, including id, is refused.',
  examples: [{ name: 'Rex', categoryId: 1, status: 'available' }]
})
export type NewPet = Static<typeof NewPetSchema>

export const PetSchema = Type.Object({
  id: idField,
  name: nameField,
  categoryId: categoryIdField,
  status: Type.Optional(PetStatusRef)
}, {
  $id: 'Pet',
  additionalProperties: false,
  description: 'An animal. `status` is absent, never null, when the animal has none.',
  examples: [{ id: 1, name: 'Rex', categoryId: 1, status: 'available' }]
})

export const PetsSchema = Type.Array(Type.Ref('Pet'), {
  $id: 'Pets',
  maxItems: 100,
  description: 'A page of animals ordered by id ascending: at most `limit` of them, and `limit` is at most 100.',
  examples: [[{ id: 1, name: 'Rex', categoryId: 1, status: 'available' }, { id: 2, name: 'Tom', categoryId: 2 }]]
})

const LimitSchema = Type.Integer({
  format: 'int32',
  ...PAGE_SIZE,
  description: `Maximum number of animals returned, ${PAGE_SIZE.minimum} to ${PAGE_SIZE.maximum}, written as digits without sign or leading zero.`,
  examples: [PAGE_SIZE.default]
})

export const ListPetsQuerySchema = Type.Object({
  limit: Type.Optional(LimitSchema),
  status: Type.Optional(Type.Unsafe<PetStatus>({ type: 'string', enum: [...PET_STATUSES], description: 'Only animals with this status.', examples: ['available'] })),
  // No example: a cursor is valid only as this server wrote it, and the API reference's "Try it out" fills each
  // parameter with its example, so any example would make the first request from the page fail.
  cursor: Type.Optional(Type.String({
    minLength: 1,
    description: 'Addition to the specification: the opaque position of the next page, taken from the `Link: rel="next"` header of the previous page. Must be used with the same `status`.'
  }))
})
export type ListPetsQuery = Static<typeof ListPetsQuerySchema>

export const PetIdParamsSchema = Type.Object({
  petId: Type.Integer({
    format: 'int64',
    minimum: 1,
    maximum: MAX_PET_ID,
    description: 'Identifier of the animal, 1 to 2^53 − 1, written as digits without sign or leading zero. A larger one up to 2^63 − 1 names no animal (404); ' +
      'anything else gets 400 (addition to the specification).',
    examples: [1]
  })
})

/**
 * The Idempotency-Key request header. Its value is checked by the route (parseIdempotencyKey), whose refusal names
 * the header; the document adds the bounds that check enforces (openapi.ts).
 */
export const IdempotencyKeyHeaderSchema = Type.String({
  description: 'Addition to the specification: 1 to 255 visible ASCII characters (a UUID is a good choice), optionally in double quotes.',
  examples: ['8e03978e-40d5-43e8-bc93-6894a57f9324']
})
