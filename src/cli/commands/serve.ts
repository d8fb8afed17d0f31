import { loadConfig } from '../../config.js'
import type { Command } from '../context.js'

export const serveCommand: Command = {
  usage: 'animal-store serve',
  summary: 'Migrate the database, then serve the API on HOST:PORT until SIGTERM or SIGINT.',
  run: async (args, context) => {
    if (args.length > 0) {
      context.stderr(`error: serve takes no arguments (got ${args.join(' ')}); configure it with environment variables`)
      return 1
    }
    const config = loadConfig(context.env)
    // Loaded here, not at start-up: the server (the framework, the portal, tracing, mail) is most of the code, and
    // no other command needs any of it.
    const { serve } = await import('../../main.js')
    await serve(config)
    return typeof process.exitCode === 'number' ? process.exitCode : 0
  }
}
