import { join } from 'node:path'
import { describe, test } from 'node:test'
import assert from 'node:assert/strict'
import { runNode, type CliResult } from '../helpers/spawn-cli.js'
import { startServer } from '../helpers/start-server.js'

const ROOT = join(import.meta.dirname, '..', '..')
const EXAMPLE = join(ROOT, 'client', 'examples', 'create-and-list.ts')

/** Runs the example as its header says (tsx), with only the given environment. */
async function runExample (env: Record<string, string>): Promise<CliResult> {
  return runNode(['--import', 'tsx', EXAMPLE], { PATH: process.env.PATH ?? '', ...env }, ROOT)
}

describe('client example create-and-list', () => {
  test('creates three animals and lists every available one across pages, exiting 0', async (t) => {
    const server = await startServer(t)
    const headers = { authorization: `Bearer ${server.key}`, 'content-type': 'application/json' }
    for (const pet of [{ name: 'Old', categoryId: 9, status: 'available' }, { name: 'Gone', categoryId: 9, status: 'sold' }]) {
      const response = await fetch(`${server.baseUrl}/v1/pets`, { method: 'POST', headers, body: JSON.stringify(pet) })
      assert.equal(response.status, 201, await response.text())
    }

    const run = await runExample({ ANIMAL_STORE_URL: `${server.baseUrl}/v1`, ANIMAL_STORE_KEY: server.key })
    assert.equal(run.code, 0, `${run.stdout}\n${run.stderr}`)
    assert.equal(run.stderr, '')
    assert.deepEqual(run.stdout.trimEnd().split('\n'), [
      'created 3 Rex',
      'created 4 Tom',
      'created 5 Kiki',
      'listed 1 Old (category 9)',
      'listed 3 Rex (category 1)',
      'listed 4 Tom (category 2)',
      'listed 5 Kiki (category 3)',
      '4 available animals'
    ])
  })

  test('prints the typed error and exits 1 when the key is refused', async (t) => {
    const server = await startServer(t)
    const run = await runExample({ ANIMAL_STORE_URL: `${server.baseUrl}/v1`, ANIMAL_STORE_KEY: 'ask_unknown' })
    assert.equal(run.code, 1, `${run.stdout}\n${run.stderr}`)
    assert.equal(run.stdout, '')
    assert.match(run.stderr, /^401 unauthorized: .+ \(request [0-9a-f-]{36}\)\n$/)
  })

  test('exits 2 with a hint when ANIMAL_STORE_KEY is not set', async () => {
    const run = await runExample({ ANIMAL_STORE_URL: 'http://127.0.0.1:9/v1' })
    assert.equal(run.code, 2, `${run.stdout}\n${run.stderr}`)
    assert.match(run.stderr, /ANIMAL_STORE_KEY/)
  })
})
