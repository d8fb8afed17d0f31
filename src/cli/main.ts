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

// Whether the last write got out, judged by that write's own callback: a later probe write would fail on a
// socket whose reader left after taking everything (`| head -1` through a socketpair), and call it lost.
let lastWrite: Promise<boolean> = Promise.resolve(true)

process.exitCode = await runCli(process.argv.slice(2), {
  env: process.env,
  stdout: (text) => {
    lastWrite = stdoutClosed
      ? Promise.resolve(false)
      : new Promise((resolve) => process.stdout.write(text + '\n', (error) => { resolve(error == null) }))
  },
  written: async () => await lastWrite,
  stderr: (text) => process.stderr.write(text + '\n'),
  readSecret: (prompt) => readSecret(process.stdin, process.stderr, prompt),
  progress: { isTerminal: process.stderr.isTTY === true, redraw: (text) => process.stderr.write(`\r${text}\u001b[K`) }
})
