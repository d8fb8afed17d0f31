import { test } from 'node:test'
import assert from 'node:assert/strict'
import { readdirSync, readFileSync } from 'node:fs'
import { join } from 'node:path'

const root = join(import.meta.dirname, '..', '..')
const guides = ['README.md', 'CONTRIBUTING.md', ...readdirSync(join(root, 'docs')).filter((file) => file.endsWith('.md')).map((file) => join('docs', file))]
const lines = (file: string): string[] => readFileSync(join(root, file), 'utf8').split('\n')

test('the README is a front door and the performance guide a reference: at most 250 and 150 lines', () => {
  assert.ok(lines('README.md').length <= 250, `README.md has ${lines('README.md').length} lines`)
  assert.ok(lines('docs/performance.md').length <= 150, `docs/performance.md has ${lines('docs/performance.md').length} lines: dated runs belong in bench/results/`)
})

test('no table cell in a guide is longer than 300 characters: the detail goes in prose beneath the table', () => {
  const long = guides.flatMap((file) => lines(file).flatMap((line, index) => line.startsWith('|')
    ? line.split(/(?<!\\)\|/).map((cell) => cell.trim()).filter((cell) => cell.length > 300).map((cell) => `${file}:${index + 1}: ${cell.length} characters: ${cell.slice(0, 60)}…`)
    : []))
  assert.deepEqual(long, [])
})
