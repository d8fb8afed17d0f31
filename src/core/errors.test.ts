import { readdirSync, readFileSync } from 'node:fs'
import { join, relative } from 'node:path'
import { test } from 'node:test'
import assert from 'node:assert/strict'
import { errors, STATUS_BY_CODE, type ApiError } from './errors.js'
import { MAX_BODY_BYTES, PAGE_SIZE } from './limits.js'

const SRC = join(import.meta.dirname, '..')
const CATALOGUE = join(import.meta.dirname, 'errors.ts')
/** What stands for each argument, so that the text around it is what the factory writes itself. */
const ARGUMENT = '\u0001'
/** Shorter fixed text ("retry shortly") may well recur in other words; a message's own sentence is longer. */
const SHORTEST_SENTENCE = 20

function sourceFiles (dir: string): string[] {
  return readdirSync(dir, { withFileTypes: true }).flatMap((entry) => {
    const path = join(dir, entry.name)
    if (entry.isDirectory()) return sourceFiles(path)
    return entry.name.endsWith('.ts') && !entry.name.endsWith('.test.ts') ? [path] : []
  })
}

/** The factory's error with a stand-in for each argument (a number where only a number does, as for a time). */
function build (factory: (...args: never[]) => ApiError): ApiError {
  const call = factory as (...args: unknown[]) => ApiError
  try {
    return call(...Array.from({ length: factory.length }, () => ARGUMENT))
  } catch {
    return call(...Array.from({ length: factory.length }, () => 0))
  }
}

/** The text each factory writes itself, between the values it is given. */
function fixedTexts (): Array<[string, string]> {
  return Object.entries(errors).flatMap(([name, factory]) => {
    return build(factory).message.split(ARGUMENT).filter((text) => text.length >= SHORTEST_SENTENCE).map((text): [string, string] => [name, text])
  })
}

test('no message of the catalogue is written again elsewhere in src/', () => {
  const files = sourceFiles(SRC).filter((file) => file !== CATALOGUE).map((file) => [relative(SRC, file), readFileSync(file, 'utf8')] as const)
  const texts = fixedTexts()
  assert.ok(texts.length > 20, `only ${texts.length} texts found`)
  const repeated = texts.flatMap(([name, text]) => files.filter(([, source]) => source.includes(text)).map(([file]) => `errors.${name}: ${file}`))
  assert.deepEqual(repeated, [])
})

test('each factory gives the status of its code, and the limits come from their constants', () => {
  for (const [name, factory] of Object.entries(errors)) {
    const error = build(factory)
    assert.equal(error.status, STATUS_BY_CODE[error.code], name)
  }
  assert.match(errors.bodyTooLarge().message, new RegExp(`\\b${MAX_BODY_BYTES}\\b`))
  assert.match(errors.limitOutOfRange().message, new RegExp(`from ${PAGE_SIZE.minimum} to ${PAGE_SIZE.maximum}\\b`))
})
