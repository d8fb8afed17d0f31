import { ErrorSchema } from './error.js'
import { NewPetSchema, PetSchema, PetsSchema, PetStatusSchema } from './pet.js'

/** The schemas operations refer to by $id (`Type.Ref('Pet')`): known to the validators and named in the document's components. */
export const SHARED_SCHEMAS = [PetStatusSchema, NewPetSchema, PetSchema, PetsSchema, ErrorSchema] as const
