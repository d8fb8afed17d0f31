#!/usr/bin/env node
import { readSecret } from './read-secret.js'
import { runCli } from './run-cli.js'

let stdoutClosed = false
// A reader that stops reading (`| head -1`) closes the pipe: no failure of the command, and no stack trace.
// Commands that print a secret ask `written` whether it got out.
process.stdout.on('error', (error: NodeJS.ErrnoException) => {
  if (error.code !== 'EPIPE') throw error
  stdoutClosed = true
})

process.exitCode = await runCli(process.argv.slice(2), {
  env: process.env,
  stdout: (text) => { if (!stdoutClosed) process.stdout.write(text + '\n') },
  written: async () => await new Promise((resolve) => process.stdout.write('', (error) => { resolve(error == null && !stdoutClosed) })),
  stderr: (text) => process.stderr.write(text + '\n'),
  readSecret: (prompt) => readSecret(process.stdin, process.stderr, prompt),
  progress: { isTerminal: process.stderr.isTTY === true, redraw: (text) => process.stderr.write(`\r${text}\u001b[K`) }
})
