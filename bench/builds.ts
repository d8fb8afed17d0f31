/**
 * What the tools that set two builds side by side share (bench/compare.ts, bench/instructions.ts):
 * the build of another commit, and the settings each side runs with.
 */
import { execFileSync } from 'node:child_process'
import { cpSync, mkdirSync, readFileSync, realpathSync, symlinkSync } from 'node:fs'
import { join } from 'node:path'
import { PRODUCTION_ENV } from './report.js'
import { root } from './support.js'

/**
 * The CLI of `ref`, built in `dir` from `git archive` with the dependencies of its own lock file:
 * the current checkout's own node_modules when the lock files are the same.
 */
export function buildAt (ref: string, dir: string): string {
  mkdirSync(dir, { recursive: true })
  execFileSync('sh', ['-c', `git archive --format=tar ${JSON.stringify(ref)} | tar -x -C ${JSON.stringify(dir)}`], { cwd: root, stdio: 'inherit' })
  const npm = (...args: string[]): void => { execFileSync('npm', args, { cwd: dir, stdio: ['ignore', 'ignore', 'inherit'] }) }
  if (readFileSync(join(dir, 'package-lock.json'), 'utf8') === readFileSync(join(root, 'package-lock.json'), 'utf8')) {
    symlinkSync(realpathSync(join(root, 'node_modules')), join(dir, 'node_modules'))
  } else {
    // No install scripts but the native addon's: the build below is the one the benchmark needs.
    npm('ci', '--ignore-scripts', '--no-audit', '--no-fund')
    const addon = (base: string): string => join(base, 'node_modules', 'better-sqlite3')
    const version = (base: string): string => (JSON.parse(readFileSync(join(addon(base), 'package.json'), 'utf8')) as { version: string }).version
    // The same version's addon, already built here, spares compiling SQLite again.
    if (version(dir) === version(root)) cpSync(join(addon(root), 'build'), join(addon(dir), 'build'), { recursive: true })
    else npm('rebuild', 'better-sqlite3')
  }
  execFileSync(process.execPath, ['scripts/build.mjs'], { cwd: dir, stdio: 'inherit' })
  return join(dir, 'dist', 'cli', 'main.js')
}

/**
 * The settings of one side: NAME=value and `production` (the production profile of `npm run bench`)
 * for both, current:NAME=value for the current build only; the value `otlp-sink` is `sinkUrl`.
 */
export function settingsOf (settings: string[], current: boolean, sinkUrl: string): Record<string, string> {
  return Object.fromEntries(settings.flatMap((setting) => {
    if (setting === 'production') return Object.entries(PRODUCTION_ENV)
    const own = setting.startsWith('current:')
    if (own && !current) return []
    const [name = '', ...value] = (own ? setting.slice('current:'.length) : setting).split('=')
    return [[name, value.join('=') === 'otlp-sink' ? sinkUrl : value.join('=')]]
  }))
}
