import assert from 'node:assert/strict'
import { spawn } from 'node:child_process'
import { once } from 'node:events'
import { closeSync, mkdtempSync, openSync, readFileSync, rmSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { test } from 'node:test'
import { pathToFileURL } from 'node:url'

const ROOT = join(import.meta.dirname, '..', '..')
const MODULE = pathToFileURL(join(ROOT, 'src', 'tick-object-shapes.ts')).href
const ROUNDS = 6

/**
 * A process that queues ticks until process.nextTick() has its feedback, then, ROUNDS times, stays
 * idle through full garbage collections, queues ticks again and prints nextTick's feedback (V8's
 * %DebugPrint, on standard output). Returns, round by round, the states of the four sites that
 * define the tick literal's keys (the first stays monomorphic either way: its class is the literal's own).
 */
async function tickLiteralSites (keep: boolean): Promise<string[][]> {
  const script = [
    `import { keepTickObjectShapes } from '${MODULE}'`,
    keep ? 'keepTickObjectShapes()' : '',
    'const tick = () => new Promise((resolve) => process.nextTick(resolve))',
    'const turn = () => new Promise((resolve) => setImmediate(resolve))',
    'for (let i = 0; i < 5000; i++) await tick()',
    `for (let round = 0; round < ${ROUNDS}; round++) {`,
    // Collected between two turns of the event loop: no tick is queued or running.
    '  for (let i = 0; i < 16; i++) { globalThis.gc(); await turn() }',
    '  for (let i = 0; i < 100; i++) await tick()',
    '  ;%DebugPrint(process.nextTick)',
    '}'
  ].join('\n')
  // V8 prints with C's stdio, which loses what a pipe set non-blocking does not take at once: a file takes all.
  const dir = mkdtempSync(join(tmpdir(), 'animal-store-tick-shapes-'))
  try {
    const out = join(dir, 'stdout')
    const fd = openSync(out, 'w')
    const child = spawn(process.execPath, ['--import', 'tsx', '--expose-gc', '--allow-natives-syntax', '--input-type=module', '--eval', script],
      { cwd: ROOT, stdio: ['ignore', fd, 'inherit'], timeout: 60_000 })
    closeSync(fd)
    const [code] = await once(child, 'exit') as [number | null]
    assert.equal(code, 0)
    return sitesByRound(readFileSync(out, 'utf8'))
  } finally {
    rmSync(dir, { recursive: true, force: true })
  }
}

function sitesByRound (stdout: string): string[][] {
  return stdout.split('DebugPrint: ').slice(1).map((round) => [...round.matchAll(/DefineKeyedOwnPropertyInLiteral (\w+)/g)].map((match) => match[1] as string))
}

test('the tick literal stays on the optimised path through idle garbage collections once its shapes are kept', async (t) => {
  const [without, kept] = await Promise.all([tickLiteralSites(false), tickLiteralSites(true)])
  assert.equal(kept.length, ROUNDS)
  if (!without.flat().includes('MEGAMORPHIC')) {
    // This Node.js keeps its ticks' shapes by itself (or prints them otherwise): nothing to compare.
    t.skip(`this Node.js (${process.version}) does not lose the tick literal's shapes: keepTickObjectShapes() is no longer needed`)
    return
  }
  for (const [round, sites] of kept.entries()) {
    assert.deepEqual(sites, ['MONOMORPHIC', 'MONOMORPHIC', 'MONOMORPHIC', 'MONOMORPHIC'], `round ${round + 1}`)
  }
})
