import { readFileSync } from 'node:fs'
import { join } from 'node:path'
import { test, type TestContext } from 'node:test'
import assert from 'node:assert/strict'
import { SCOPES, type Scope } from '../../src/core/api-keys.js'
import { SCOPE_WORDS } from '../../src/portal/views/keys.js'
import { buildTestApp, tempDir } from '../helpers/build-app.js'
import { HTTP_METHODS, type OpenApiDocument } from '../helpers/openapi-validator.js'
import { cliEnv, runCli } from '../helpers/spawn-cli.js'

/**
 * Which scope an operation needs is stated once, on its route (x-required-scopes). The CLI's help
 * and the portal's key form are derived from the routes; the guides say it in words, and must say
 * the same: this test checks all of them against the served document.
 */

const DOCS = join(import.meta.dirname, '..', '..', 'docs')
const GUIDE = join(DOCS, 'api-keys.md')
/** An operationId as the texts write it: camelCase, such as listPets. */
const OPERATION_ID = /(?<![{\w])[a-z]+(?:[A-Z][a-z]*)+(?![\w}])/g

type OperationsByScope = Record<Scope, string[]>

/** The operations each scope allows, read from the routes' schemas as the served document shows them. */
async function routesScopes (t: TestContext): Promise<OperationsByScope> {
  const { app } = await buildTestApp(t)
  const response = await app.inject({ url: '/v1/openapi.json' })
  assert.equal(response.statusCode, 200, response.body)
  const doc = response.json<OpenApiDocument>()
  const byScope = Object.fromEntries(SCOPES.map((scope) => [scope, [] as string[]])) as OperationsByScope
  for (const item of Object.values(doc.paths)) {
    for (const method of HTTP_METHODS) {
      const operation = item[method] as { operationId?: string, 'x-required-scopes'?: Scope[] } | undefined
      for (const scope of operation?.['x-required-scopes'] ?? []) byScope[scope].push(operation?.operationId ?? '')
    }
  }
  return sorted(byScope)
}

function sorted (byScope: OperationsByScope): OperationsByScope {
  return Object.fromEntries(SCOPES.map((scope) => [scope, [...byScope[scope]].sort()])) as OperationsByScope
}

function operationIdsIn (text: string): string[] {
  return [...text.matchAll(OPERATION_ID)].map(([id]) => id)
}

/** The guide's table of scopes: `| \`animals:read\` | \`listPets\` (…) and \`getPet\` (…) |`. */
function guideScopes (): OperationsByScope {
  const rows = readFileSync(GUIDE, 'utf8').split('\n').filter((line) => /^\| `[a-z]+:[a-z]+` \|/.test(line))
  return sorted(Object.fromEntries(rows.map((row) => {
    const [, scope = '', allows = ''] = row.split('|').map((cell) => cell.trim())
    return [scope.replaceAll('`', ''), operationIdsIn(allows)]
  })) as OperationsByScope)
}

/** The CLI's help of keys create: `animals:read allows listPets and getPet, animals:write allows createPet`. */
async function cliHelpScopes (t: TestContext): Promise<OperationsByScope> {
  const { stdout, code } = await runCli(['keys', 'create', '--help'], cliEnv(join(tempDir(t), 'help.db')))
  assert.equal(code, 0, stdout)
  const statement = stdout.split('\n').find((line) => line.includes(' allows ')) ?? ''
  return sorted(Object.fromEntries(statement.trim().split(', ').map((part) => {
    const [scope = '', allows = ''] = part.split(' allows ')
    return [scope, operationIdsIn(allows)]
  })) as OperationsByScope)
}

/** The client guide's table of operations: `| \`listPets\` (\`animals:read\`) | …`, the scope in the first cell. */
function clientGuideScopes (): OperationsByScope {
  const byScope = Object.fromEntries(SCOPES.map((scope) => [scope, [] as string[]])) as OperationsByScope
  for (const line of readFileSync(join(DOCS, 'client-developers.md'), 'utf8').split('\n')) {
    const match = /^\| `([a-zA-Z]+)` \((?:[^)`]*, )?`([a-z]+:[a-z]+)`\) \|/.exec(line)
    if (match) byScope[match[2] as Scope].push(match[1] ?? '')
  }
  return sorted(byScope)
}

/** The record in docs/decisions.md: `A key carries scopes: \`animals:read\` allows \`listPets\` and \`getPet\`, …;`. */
function decisionScopes (): OperationsByScope {
  const line = readFileSync(join(DOCS, 'decisions.md'), 'utf8').split('\n').find((text) => text.includes('A key carries scopes:')) ?? ''
  const statements = line.slice(line.indexOf(':') + 1).split(';')[0] ?? ''
  return sorted(Object.fromEntries(statements.split(', `').map((part) => {
    const [scope = '', allows = ''] = part.split(' allows ')
    return [scope.replaceAll('`', '').trim(), operationIdsIn(allows)]
  })) as OperationsByScope)
}

test('the guides, the CLI help and the portal name the operations each route\'s x-required-scopes allows', async (t) => {
  const fromRoutes = await routesScopes(t)
  assert.ok(fromRoutes['animals:read'].length > 0 && fromRoutes['animals:write'].length > 0, JSON.stringify(fromRoutes))
  assert.deepEqual(guideScopes(), fromRoutes, 'docs/api-keys.md, the Scopes table')
  assert.deepEqual(await cliHelpScopes(t), fromRoutes, 'animal-store keys create --help')
  const portal = sorted(Object.fromEntries(SCOPES.map((scope) => [scope, operationIdsIn(SCOPE_WORDS[scope])])) as OperationsByScope)
  assert.deepEqual(portal, fromRoutes, 'the portal\'s key form')
  assert.deepEqual(clientGuideScopes(), fromRoutes, 'docs/client-developers.md, the table of operations')
  assert.deepEqual(decisionScopes(), fromRoutes, 'docs/decisions.md, the record of scopes')
})
