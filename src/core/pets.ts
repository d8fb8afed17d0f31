export const PET_STATUSES = ['available', 'pending', 'sold'] as const
export type PetStatus = typeof PET_STATUSES[number]

export interface NewPetRecord {
  name: string
  /** Exact int64 value; a bigint only when it lies beyond Number.MAX_SAFE_INTEGER. */
  categoryId: number | bigint
  status?: PetStatus
}

/**
 * The largest id an animal may have (docs/decisions.md): ids are JSON numbers, which every client
 * reads exactly up to 2^53 − 1, so ids are assigned from 1 to that and never beyond.
 */
export const MAX_PET_ID = Number.MAX_SAFE_INTEGER

export interface PetRecord extends NewPetRecord {
  id: number
}

/**
 * Serialises an animal in the one field order the API uses. A category id beyond 2^53
 * is written digit for digit, so it reaches the client exactly as it was sent.
 */
export function petToJson (pet: PetRecord): string {
  const status = pet.status === undefined ? '' : `,"status":"${pet.status}"`
  return `{"id":${pet.id},"name":${JSON.stringify(pet.name)},"categoryId":${pet.categoryId.toString()}${status}}`
}
