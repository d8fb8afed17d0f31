/**
 * The one definition of a live API key: not revoked, and not past its expiry. As an SQL condition
 * on `api_keys` that both engines accept, given the placeholder that binds the current time in
 * milliseconds (`?` for SQLite, `$n` for PostgreSQL); and the same rule on a row already read.
 * Every question "does this key work?" (the cap on keys per account, the verifier's lookup, the
 * portal's and the CLI's lists) is answered from here.
 */
export function liveKeySql (now: string): string {
  return `(revoked_at IS NULL AND (expires_at IS NULL OR expires_at > ${now}))`
}

export function isLiveKey (row: { revokedAt: Date | null, expiresAt: Date | null }, now: number): boolean {
  return row.revokedAt === null && (row.expiresAt === null || row.expiresAt.getTime() > now)
}
