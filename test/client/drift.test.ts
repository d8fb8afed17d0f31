import { test } from 'node:test'
import assert from 'node:assert/strict'
import { readCommittedClientFiles, renderClientFiles } from '../../scripts/generate-client.js'

const REGENERATE = 'run `npm run client:generate` and commit client/openapi.json and client/src/schema.ts'

/** The first line where two texts differ, for a failure message that says where to look. */
function firstDifference (committed: string, fresh: string): string {
  const a = committed.split('\n')
  const b = fresh.split('\n')
  for (let i = 0; i < Math.max(a.length, b.length); i++) {
    if (a[i] !== b[i]) return `line ${i + 1}: committed ${JSON.stringify(a[i])}, served ${JSON.stringify(b[i])}`
  }
  return 'no line differs'
}

test('client/openapi.json and client/src/schema.ts are byte for byte what the served document generates', async () => {
  const [committed, fresh] = await Promise.all([readCommittedClientFiles(), renderClientFiles()])
  assert.ok(committed.openapiJson === fresh.openapiJson,
    `client/openapi.json differs from GET /v1/openapi.json (${firstDifference(committed.openapiJson, fresh.openapiJson)}): ${REGENERATE}`)
  assert.ok(committed.schemaTs === fresh.schemaTs,
    `client/src/schema.ts differs from what openapi-typescript generates (${firstDifference(committed.schemaTs, fresh.schemaTs)}): ${REGENERATE}`)
})
