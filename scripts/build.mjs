// Builds dist/cli/main.js, the one file the bin, `npm start` and the image run. The CLI and the
// server it starts are bundled into it: Node then reads and compiles one module instead of
// hundreds, which halves start-up (see docs/performance.md). Type checking is tsc's job.
import { chmodSync, cpSync, rmSync } from 'node:fs'
import { build } from 'esbuild'

const OUT = 'dist/cli/main.js'

rmSync('dist', { recursive: true, force: true })
await build({
  entryPoints: ['src/cli/main.ts'],
  outfile: OUT,
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
  // a character. Licence notices go to main.js.LEGAL.txt beside it.
  minifyWhitespace: true,
  legalComments: 'external',
  logLevel: 'warning'
})
// The portal reads its assets from beside the module that holds it.
cpSync('src/portal/assets', 'dist/cli/assets', { recursive: true })
chmodSync(OUT, 0o755)
