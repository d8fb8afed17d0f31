import { readFile } from 'node:fs/promises'
import { join } from 'node:path'
import { test } from 'node:test'
import assert from 'node:assert/strict'
import { VARIABLES, envValue } from '../../src/config.js'
import { TABLE_END, TABLE_START, readOperationsGuide, renderConfigTable, tableCells, withConfigTable } from '../../scripts/config-table.js'

const REGENERATE = 'run `npm run docs:config` and commit docs/operations.md'
/** Past this a table cell is hard to read; the explanation belongs in a prose section, linked from the cell. */
const MAX_CELL_LENGTH = 300

test('the configuration table of docs/operations.md is what the configuration schema generates', async () => {
  const guide = await readOperationsGuide()
  assert.ok(guide.includes(TABLE_START) && guide.includes(TABLE_END), `docs/operations.md lacks the table's markers: ${REGENERATE}`)
  const committed = guide.slice(guide.indexOf(TABLE_START), guide.indexOf(TABLE_END))
  const fresh = withConfigTable(guide, renderConfigTable())
  const generated = fresh.slice(fresh.indexOf(TABLE_START), fresh.indexOf(TABLE_END))
  const differs = committed.split('\n').find((line, i) => line !== generated.split('\n')[i])
  assert.ok(committed === generated, `docs/operations.md's configuration table differs from src/config-schema.ts (first at ${JSON.stringify(differs)}): ${REGENERATE}`)
})

test('no cell of the configuration table is longer than a reader takes in at a glance', () => {
  for (const cell of tableCells().flat()) {
    assert.ok(cell.length <= MAX_CELL_LENGTH, `a cell of ${cell.length} characters: move the detail to a prose section of the guide and link it: ${cell}`)
  }
})

/** The README's table of the first settings: each row names variables and gives their defaults in the same order. */
async function readmeSettings (): Promise<Array<{ name: string, given: string }>> {
  const readme = await readFile(join(import.meta.dirname, '..', '..', 'README.md'), 'utf8')
  const start = readme.indexOf('\n## Configuration')
  const section = readme.slice(start, readme.indexOf('\n## ', start + 1))
  return section.split('\n').filter((line) => line.startsWith('| `')).flatMap((line) => {
    const [names = '', defaults = ''] = line.slice(2).split(' | ')
    const variables = [...names.matchAll(/`([A-Z_]+)`/g)].map((match) => match[1] ?? '')
    const given = defaults.split(', ')
    assert.equal(given.length, variables.length, `README row ${line}: one default per variable`)
    return variables.map((name, i) => ({ name, given: given[i] ?? '' }))
  })
}

test('the README names settings the schema has, with the schema\'s defaults', async () => {
  const settings = await readmeSettings()
  assert.ok(settings.length > 0, 'the README\'s Configuration section has a table of variables')
  const schemas = new Map(VARIABLES.map(([, schema]) => [schema.env, schema]))
  for (const { name, given } of settings) {
    const schema = schemas.get(name)
    assert.ok(schema !== undefined, `README.md names ${name}, which src/config-schema.ts does not define`)
    const actual = envValue(schema.default)
    // "unset" and "off" stand for no value and for 0; otherwise the README quotes the value itself.
    const expected = given.startsWith('unset') ? '' : given.startsWith('off') ? '0' : /^`([^`]*)`/.exec(given)?.[1]
    assert.equal(actual, expected, `README.md gives ${name} the default ${given}; src/config-schema.ts says ${actual === '' ? 'unset' : actual}`)
  }
})
