/** The largest request body the API reads, in bytes: a larger one gets 413. */
export const MAX_BODY_BYTES = 65_536

/** The page size of a list: its bounds, and the size of a page when the request names none. */
export const PAGE_SIZE = { minimum: 1, maximum: 100, default: 20 } as const

/** The longest path segment the router takes; a longer one gets 400 naming this limit. */
export const MAX_PATH_SEGMENT_LENGTH = 2048

const DIGIT_GROUPS = new Intl.NumberFormat('en-US')

/** A figure as the guides and the document write it for people (65,536), whereas messages give the digits. */
export function figure (value: number): string {
  return DIGIT_GROUPS.format(value)
}
