/**
 * The one definition of a live API key, as an SQL condition on `api_keys` that both engines
 * accept: not revoked. Every query that asks "does this key work?" (the cap on keys per
 * account, the verifier's lookup, the portal's list) reads it from here, so a further way for a
 * key to stop working (an expiry) is added in this one place.
 */
export const LIVE_KEY_SQL = 'revoked_at IS NULL'
