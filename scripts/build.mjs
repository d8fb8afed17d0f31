// Builds dist/cli/main.js, the file the bin, `npm start` and the image run, and dist/cli/server.js
// beside it, the server that `serve` loads. Each is one bundle: Node then reads and compiles one
// module instead of hundreds, which halves start-up (see docs/performance.md). The server is most
// of the code and no other command needs it, so a command such as `keys list` compiles only the
// CLI's small bundle. The two share no state: `serve` hands the server its configuration and
// nothing else. Type checking is tsc's job.
import { chmodSync, cpSync, rmSync } from 'node:fs'
import { resolve } from 'node:path'
import { build } from 'esbuild'

const OUT_DIR = 'dist/cli'
const SERVE_COMMAND = resolve('src/cli/commands/serve.ts')

/** The `serve` command's import of the server, pointed at the server's own bundle. */
const serverApart = {
  name: 'server-apart',
  setup (build) {
    build.onResolve({ filter: /^\.\.\/\.\.\/main\.js$/ }, (args) => args.importer === SERVE_COMMAND ? { path: './server.js', external: true } : undefined)
  }
}

rmSync('dist', { recursive: true, force: true })
await build({
  entryPoints: { main: 'src/cli/main.ts', server: 'src/main.ts' },
  outdir: OUT_DIR,
  plugins: [serverApart],
  bundle: true,
  platform: 'node',
  target: 'node20',
  format: 'esm',
  sourcemap: true,
  // Loaded from node_modules when used: a native addon, the clients of optional services
  // (loaded only when configured), the pretty printer of logs read at a terminal, and a plugin
  // that serves files from its own folder.
  external: ['better-sqlite3', 'pg', 'ioredis', '@fastify/swagger-ui', 'pino-pretty'],
  // Bundled CommonJS dependencies call require(), which an ES module does not have.
  banner: { js: "import { createRequire as createRequireOfBundle } from 'node:module'; const require = createRequireOfBundle(import.meta.url);" },
  // Without comments the bundle is all ASCII: V8 holds a source with any other character at two bytes
  // a character. Licence notices go to a .LEGAL.txt beside each bundle.
  minifyWhitespace: true,
  legalComments: 'external',
  logLevel: 'warning'
})
// The portal reads its assets from beside the module that holds it.
cpSync('src/portal/assets', `${OUT_DIR}/assets`, { recursive: true })
chmodSync(`${OUT_DIR}/main.js`, 0o755)
