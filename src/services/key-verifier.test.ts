import { mkdtempSync, rmSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { test, type TestContext } from 'node:test'
import assert from 'node:assert/strict'
import { openSqliteStore } from '../storage/sqlite/sqlite-store.js'
import type { Store } from '../storage/store.js'
import { createAccount, createApiKey } from './accounts.js'
import { KeyVerifier } from './key-verifier.js'

/** A store with one account and a started verifier on it; the verifier closes (flushing last uses) before the store. */
async function verifierOnStore (t: TestContext): Promise<{ store: Store, verifier: KeyVerifier }> {
  const dir = mkdtempSync(join(tmpdir(), 'animal-store-verifier-'))
  const store = openSqliteStore(join(dir, 'keys.sqlite'))
  const verifier = new KeyVerifier(store.apiKeys, (error) => { throw error })
  t.after(async () => {
    await verifier.close()
    await store.close()
    rmSync(dir, { recursive: true, force: true })
  })
  await store.migrate()
  await createAccount(store, { email: 'a@example.com' })
  await verifier.start()
  return { store, verifier }
}

/** Waits (polling, with a deadline) until the verifier's generation has moved past `from`. */
async function generationAfter (verifier: KeyVerifier, from: number): Promise<number> {
  const deadline = Date.now() + 5000
  while (verifier.generation === from) {
    assert.ok(Date.now() < deadline, 'the generation did not move within 5 s')
    await new Promise((resolve) => setTimeout(resolve, 20))
  }
  return verifier.generation
}

test('a revocation drops the revoked key alone, and moves the generation only when the key was remembered', async (t) => {
  const { store, verifier } = await verifierOnStore(t)
  const kept = await createApiKey(store, { email: 'a@example.com' })
  const doomed = await createApiKey(store, { email: 'a@example.com' })
  const never = await createApiKey(store, { email: 'a@example.com' })
  const lookups: boolean[] = []
  verifier.onLookup = (hit) => lookups.push(hit)
  assert.deepEqual(await verifier.verify(kept.key), { keyId: kept.row.id, accountId: kept.row.accountId, scopes: new Set(['animals:read', 'animals:write']), expiresAt: Infinity, test: false })
  assert.ok(await verifier.verify(doomed.key))
  assert.deepEqual(lookups, [false, false])
  assert.ok(verifier.peek(kept.key) && verifier.peek(doomed.key))

  // A key never verified here is revoked: nothing this verifier holds changes. The one it remembers is revoked next;
  // the generation can only move for that one.
  const generation = verifier.generation
  assert.equal(await store.apiKeys.revoke(never.row.id), 'revoked')
  assert.equal(await store.apiKeys.revoke(doomed.row.id), 'revoked')
  assert.equal(await generationAfter(verifier, generation), generation + 1)
  assert.equal(verifier.peek(doomed.key), undefined)
  assert.equal(await verifier.verify(doomed.key), undefined)
  assert.deepEqual(verifier.cached(kept.key), { keyId: kept.row.id, accountId: kept.row.accountId, scopes: new Set(['animals:read', 'animals:write']), expiresAt: Infinity, test: false })
  assert.equal(lookups.at(-1), true, 'the other key is still a cache hit')

  verifier.invalidate([never.row.id, 'key_notremembered00'])
  assert.equal(verifier.generation, generation + 1, 'dropping keys it never held moves nothing')
  verifier.invalidate(undefined)
  assert.equal(verifier.generation, generation + 2)
  assert.equal(verifier.peek(kept.key), undefined, 'forgetting everything forgets everything')
})
