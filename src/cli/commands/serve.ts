import { loadConfig } from '../../config.js'
import { serve } from '../../main.js'
import type { Command } from '../context.js'

export const serveCommand: Command = {
  usage: 'animal-store serve',
  summary: 'Migrate the database, then serve the API on HOST:PORT until SIGTERM or SIGINT.',
  run: async (args, context) => {
    if (args.length > 0) {
      context.stderr(`error: serve takes no arguments (got ${args.join(' ')}); configure it with environment variables`)
      return 1
    }
    await serve(loadConfig(context.env))
    return typeof process.exitCode === 'number' ? process.exitCode : 0
  }
}
