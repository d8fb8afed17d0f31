import { execFile } from 'node:child_process'
import { chmodSync, mkdirSync, readFileSync, writeFileSync } from 'node:fs'
import { join } from 'node:path'
import { test } from 'node:test'
import assert from 'node:assert/strict'
import { tempDir } from '../helpers/build-app.js'
import { dbFile, launchServer } from '../helpers/server-process.js'
import { CLI_PATH, cliEnv } from '../helpers/spawn-cli.js'

const README = join(import.meta.dirname, '..', '..', 'README.md')
const SECTION = 'Five minutes with curl'
/** The address the README's commands use; the test's server listens elsewhere. */
const README_ADDRESS = 'localhost:8080'

interface Step {
  command: string
  /** The lines the README shows under the command; `…` stands for what differs from run to run. */
  output: string[]
}

/** The README's walk-through: commands (joined across `\` line ends), each followed by the `# ` lines of its output. */
function walkthrough (): Step[] {
  const markdown = readFileSync(README, 'utf8')
  const section = new RegExp(`^## ${SECTION}\\n([\\s\\S]*?)^## `, 'm').exec(markdown)?.[1]
  assert.ok(section, `README.md has a "## ${SECTION}" section`)
  const script = /```sh\n([\s\S]*?)```/.exec(section)?.[1]
  assert.ok(script, `the "${SECTION}" section has a sh block`)
  const steps: Step[] = []
  let pending = ''
  for (const line of script.split('\n')) {
    if (line.trim() === '') continue
    if (line.startsWith('# ')) {
      const step = steps.at(-1)
      assert.ok(step, `output before any command: ${line}`)
      step.output.push(line.slice(2))
    } else if (line.endsWith('\\')) {
      pending += `${line.slice(0, -1)} `
    } else {
      steps.push({ command: pending + line, output: [] })
      pending = ''
    }
  }
  return steps
}

/** A line the README shows, as a pattern: `…` matches anything. */
function pattern (line: string): RegExp {
  return new RegExp(`^${line.split('…').map((part) => part.replace(/[.*+?^${}()|[\]\\]/g, '\\$&')).join('.+?')}$`)
}

test("the README's curl walk-through prints what the README shows, step by step", { timeout: 120_000 }, async (t) => {
  const steps = walkthrough()
  assert.ok(steps.length >= 5, JSON.stringify(steps))
  const dir = tempDir(t)
  const env = cliEnv(dbFile(dir))
  const server = launchServer(t, env)
  const baseUrl = await server.listening

  // `npx animal-store` as the checkout runs it, without npm's look-up: the built bin itself.
  const bin = join(dir, 'bin')
  mkdirSync(bin)
  writeFileSync(join(bin, 'npx'), `#!/bin/sh\nif [ "$1" = animal-store ]; then shift; exec "${process.execPath}" "${CLI_PATH}" "$@"; fi\necho "npx $1 is not part of the walk-through" >&2\nexit 127\n`)
  chmodSync(join(bin, 'npx'), 0o755)

  // One shell, as in a terminal (KEY set by one step is used by the next), each step's output between markers.
  const script = steps.map((step, index) =>
    `printf '\\n@@ %d\\n' ${index}\n${step.command.replaceAll(README_ADDRESS, new URL(baseUrl).host)}\nprintf '\\n@@ end\\n'`).join('\n')
  const { stdout, stderr } = await new Promise<{ stdout: string, stderr: string }>((resolve, reject) => {
    execFile('bash', ['-c', script], { cwd: dir, env: { ...env, PATH: `${bin}:${env.PATH ?? ''}` }, timeout: 60_000 }, (error, out, err) => {
      if (error !== null) reject(new Error(`${error.message}\n${err}`))
      else resolve({ stdout: out, stderr: err })
    })
  })

  for (const [index, step] of steps.entries()) {
    const printed = new RegExp(`\\n@@ ${index}\\n([\\s\\S]*?)\\n@@ end\\n`).exec(stdout)?.[1]
    assert.notEqual(printed, undefined, `step ${index + 1} ran: ${step.command}\n${stdout}\n${stderr}`)
    const lines = (printed ?? '').replaceAll('\r', '').split('\n').filter((line) => line !== '')
    const context = `step ${index + 1}: ${step.command}\nprinted:\n${lines.join('\n')}\nthe README shows:\n${step.output.join('\n')}\n${stderr}`
    assert.equal(lines.length, step.output.length, context)
    for (const [at, line] of lines.entries()) assert.match(line, pattern(step.output[at] ?? ''), context)
  }
})
