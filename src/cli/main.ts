#!/usr/bin/env node
import { readSecret } from './read-secret.js'
import { runCli } from './run-cli.js'

process.exitCode = await runCli(process.argv.slice(2), {
  env: process.env,
  stdout: (text) => process.stdout.write(text + '\n'),
  stderr: (text) => process.stderr.write(text + '\n'),
  readSecret: (prompt) => readSecret(process.stdin, process.stderr, prompt),
  progress: { isTerminal: process.stderr.isTTY === true, redraw: (text) => process.stderr.write(`\r${text}\u001b[K`) }
})
