import { readFileSync } from 'node:fs'
import { join } from 'node:path'
import { describe, test } from 'node:test'
import assert from 'node:assert/strict'
import { parse } from 'yaml'

// No Docker engine runs where the tests run, so the deployment files are checked by reading them.
const root = join(import.meta.dirname, '..', '..')
const read = (file: string): string => readFileSync(join(root, file), 'utf8')

interface Instruction { keyword: string, args: string }

/** Dockerfile instructions with line continuations joined and comments dropped. */
function instructions (text: string): Instruction[] {
  const joined = text.split('\n').filter((line) => !line.trimStart().startsWith('#')).join('\n').replace(/\\\n/g, ' ')
  return joined.split('\n').map((line) => line.trim()).filter(Boolean).map((line) => {
    const [keyword = '', ...rest] = line.split(/\s+/)
    return { keyword: keyword.toUpperCase(), args: rest.join(' ') }
  })
}

describe('Dockerfile', () => {
  const all = instructions(read('Dockerfile'))
  const stages: Instruction[][] = []
  for (const instruction of all) {
    if (instruction.keyword === 'FROM') stages.push([])
    stages.at(-1)?.push(instruction)
  }
  const final = stages.at(-1) ?? []

  test('is multi-stage and the final stage copies build output from earlier stages', () => {
    assert.ok(stages.length >= 2, 'at least two stages')
    assert.ok(final.some((i) => i.keyword === 'COPY' && /--from=build\b.*dist/.test(i.args)), 'dist/ comes from the build stage')
    assert.ok(final.some((i) => i.keyword === 'COPY' && /--from=production-dependencies\b.*node_modules/.test(i.args)), 'node_modules comes from a production-only install')
    assert.ok(!final.some((i) => i.keyword === 'RUN' && /npm (ci|install)/.test(i.args)), 'nothing is installed in the final stage')
  })

  test('installs production dependencies only, for the shipped node_modules', () => {
    const deps = stages.find((stage) => /AS production-dependencies/i.test(stage[0]?.args ?? '')) ?? []
    assert.ok(deps.some((i) => i.keyword === 'RUN' && /npm ci --omit=dev/.test(i.args)))
  })

  test('runs as a non-root user', () => {
    const user = final.filter((i) => i.keyword === 'USER').at(-1)
    assert.ok(user, 'the final stage sets USER')
    assert.ok(!/^(root|0)(:|$)/.test(user.args), `USER ${user.args} is not root`)
  })

  test('checks its health on /healthz and starts the server', () => {
    const healthcheck = final.find((i) => i.keyword === 'HEALTHCHECK')
    assert.match(healthcheck?.args ?? '', /\/healthz/)
    assert.match(final.find((i) => i.keyword === 'ENTRYPOINT')?.args ?? '', /dist\/cli\/main\.js/)
    assert.match(final.find((i) => i.keyword === 'CMD')?.args ?? '', /serve/)
    assert.match(final.find((i) => i.keyword === 'EXPOSE')?.args ?? '', /8080/)
  })

  test('uses the Node.js major version the project supports', () => {
    for (const stage of stages) assert.match(stage[0]?.args ?? '', /^(node:20\b|toolchain|build)/, stage[0]?.args)
  })
})

describe('compose.yaml', () => {
  const compose = parse(read('compose.yaml'), { merge: true }) as {
    services: Record<string, { image?: string, build?: unknown, environment?: Record<string, string>, depends_on?: Record<string, { condition: string }>, ports?: string[], volumes?: string[], healthcheck?: unknown }>
  }
  const services = compose.services

  test('has PostgreSQL with a health check, two API instances and a proxy', () => {
    assert.match(services.postgres?.image ?? '', /^postgres:/)
    assert.ok(services.postgres?.healthcheck)
    for (const name of ['api-1', 'api-2']) {
      const api = services[name]
      assert.ok(api?.build, `${name} is built from this repository`)
      assert.match(api?.environment?.DATABASE_URL ?? '', /^postgres:\/\/[^@]+@postgres:5432\//, `${name} uses the postgres service`)
      assert.equal(api?.depends_on?.postgres?.condition, 'service_healthy')
    }
    assert.match(services.proxy?.image ?? '', /^nginx:/)
    assert.deepEqual(Object.keys(services.proxy?.depends_on ?? {}).sort(), ['api-1', 'api-2'])
    assert.ok(services.proxy?.ports?.some((port) => /:80$/.test(port)))
  })

  test('the proxy configuration it mounts exists and balances both instances', () => {
    const mount = services.proxy?.volumes?.find((volume) => volume.includes('nginx')) ?? ''
    const file = mount.split(':')[0] ?? ''
    const nginx = read(file)
    assert.match(nginx, /server api-1:8080/)
    assert.match(nginx, /server api-2:8080/)
    assert.match(nginx, /proxy_pass http:\/\/animal_store/)
  })
})
