import { execFile } from 'node:child_process'
import { readFileSync, writeFileSync } from 'node:fs'
import { join } from 'node:path'
import { promisify } from 'node:util'
import { test } from 'node:test'
import assert from 'node:assert/strict'
import { tempDir } from '../helpers/build-app.js'
import { startServer } from '../helpers/start-server.js'

const ROOT = join(import.meta.dirname, '..', '..')
const README = join(ROOT, 'client', 'README.md')
const run = promisify(execFile)

interface QuickStart {
  setup: string[]
  file: { name: string, text: string }
  command: string
  output: string[]
}

/** The code blocks of the README's "Quick start" section: setup commands, the program, and the run with its output. */
function quickStart (): QuickStart {
  const markdown = readFileSync(README, 'utf8')
  const section = /^## Quick start\n([\s\S]*?)^## /m.exec(markdown)?.[1]
  assert.ok(section, 'client/README.md has a "## Quick start" section')
  const blocks = [...section.matchAll(/(?:`([\w.-]+)`:?\s*\n\n)?```(\w+)\n([\s\S]*?)```/g)].map((match) => ({ file: match[1], lang: match[2], text: match[3] ?? '' }))
  const [setup, program, runBlock] = blocks
  assert.equal(setup?.lang, 'sh', 'the first block sets up the folder')
  assert.equal(program?.lang, 'js', 'the second block is the program')
  assert.ok(program.file, 'the program block is introduced by its file name')
  assert.equal(runBlock?.lang, 'sh', 'the third block runs it')
  const lines = (text: string): string[] => text.split('\n').filter((line) => line.trim() !== '')
  const [command = '', ...output] = lines(runBlock.text)
  return {
    setup: lines(setup.text).map((line) => line.replace(/\s+#.*$/, '')),
    file: { name: program.file, text: program.text },
    command,
    output: output.map((line) => line.replace(/^# /, ''))
  }
}

test("client/README.md's quick start runs in an empty folder with the commands it gives", { timeout: 180_000 }, async (t) => {
  const steps = quickStart()
  const server = await startServer(t)
  const dir = tempDir(t)
  // Offline-safe: the client's dependencies are already in the checkout; anything npm would look up comes from its cache.
  const env = {
    ...process.env,
    npm_config_prefer_offline: 'true',
    npm_config_audit: 'false',
    npm_config_fund: 'false',
    npm_config_update_notifier: 'false',
    ANIMAL_STORE_URL: `${server.baseUrl}/v1`
  }
  for (const command of steps.setup) {
    await run('bash', ['-c', command.replace('<path-to-checkout>', ROOT)], { cwd: dir, env, timeout: 120_000 })
  }
  const manifest = JSON.parse(readFileSync(join(dir, 'package.json'), 'utf8')) as { type?: string, dependencies?: Record<string, string> }
  assert.equal(manifest.type, 'module')
  assert.ok(manifest.dependencies?.['@animal-store/client'], JSON.stringify(manifest))

  writeFileSync(join(dir, steps.file.name), steps.file.text)
  assert.match(steps.command, /ANIMAL_STORE_KEY=ask_…/)
  const { stdout } = await run('bash', ['-c', steps.command.replace('ask_…', server.key)], { cwd: dir, env, timeout: 60_000 })
  assert.deepEqual(stdout.trimEnd().split('\n'), steps.output)
})
