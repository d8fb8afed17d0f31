import { parseArgs } from 'node:util'
import { describeConfig, loadConfig } from '../../config.js'
import type { Command } from '../context.js'

export const configCommand: Command = {
  usage: 'animal-store config [--json]',
  summary: 'Print the effective configuration (environment plus defaults), secrets masked.',
  run: async (args, context) => {
    const { values } = parseArgs({ args, options: { json: { type: 'boolean' } }, strict: true })
    const rows = describeConfig(loadConfig(context.env))
    if (values.json === true) {
      context.stdout(JSON.stringify(Object.fromEntries(rows), null, 2))
      return 0
    }
    const width = Math.max(...rows.map(([name]) => name.length))
    for (const [name, value] of rows) {
      const source = context.env[name] === undefined || context.env[name] === '' ? '  (default)' : ''
      context.stdout(`${name.padEnd(width)}  ${value === '' ? '-' : value}${source}`)
    }
    return 0
  }
}
