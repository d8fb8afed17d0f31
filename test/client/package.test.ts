import { execFile } from 'node:child_process'
import { existsSync, mkdirSync, mkdtempSync, readFileSync, rmSync } from 'node:fs'
import { join } from 'node:path'
import { pathToFileURL } from 'node:url'
import { promisify } from 'node:util'
import { test } from 'node:test'
import assert from 'node:assert/strict'

const ROOT = join(import.meta.dirname, '..', '..')
const CLIENT = join(ROOT, 'client')
const TSC = join(ROOT, 'node_modules', 'typescript', 'bin', 'tsc')

interface ClientPackage {
  name: string
  type: string
  exports: { '.': { types: string, default: string } }
  scripts: Record<string, string>
  dependencies: Record<string, string>
}

test('the client package builds with its own tsconfig into the files its exports name', async (t) => {
  const pkg = JSON.parse(readFileSync(join(CLIENT, 'package.json'), 'utf8')) as ClientPackage
  assert.equal(pkg.name, '@animal-store/client')
  assert.equal(pkg.type, 'module')
  assert.equal(pkg.scripts.prepare, 'tsc -p tsconfig.json', 'installing the package from the checkout builds it')
  assert.ok(pkg.dependencies['openapi-fetch'], 'openapi-fetch is a runtime dependency of the client')
  assert.ok(pkg.dependencies['lossless-json'], 'lossless-json, which keeps int64 values exact, is a runtime dependency of the client')

  // Built below node_modules/ of the checkout, so the built module resolves openapi-fetch as an installed client does.
  const cache = join(ROOT, 'node_modules', '.cache')
  mkdirSync(cache, { recursive: true })
  const outDir = mkdtempSync(join(cache, 'animal-store-client-'))
  t.after(() => rmSync(outDir, { recursive: true, force: true }))
  await promisify(execFile)(process.execPath, [TSC, '-p', join(CLIENT, 'tsconfig.json'), '--outDir', outDir])

  const types = join(outDir, pkg.exports['.'].types.replace(/^\.\/dist\//, ''))
  const entry = join(outDir, pkg.exports['.'].default.replace(/^\.\/dist\//, ''))
  assert.ok(existsSync(types), `${pkg.exports['.'].types} is built`)
  assert.ok(existsSync(entry), `${pkg.exports['.'].default} is built`)
  const built = await import(pathToFileURL(entry).href) as Record<string, unknown>
  assert.deepEqual(Object.keys(built).sort(), ['AnimalStoreError', 'UNEXPECTED_RESPONSE', 'createAnimalStoreClient', 'parseJson'])
})
