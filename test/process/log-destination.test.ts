import assert from 'node:assert/strict'
import { spawn, type ChildProcessWithoutNullStreams } from 'node:child_process'
import { once } from 'node:events'
import { createRequire } from 'node:module'
import { closeSync, existsSync, mkdtempSync, openSync, readFileSync, rmSync, writeFileSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { createInterface } from 'node:readline'
import { pathToFileURL } from 'node:url'
import { test, type TestContext } from 'node:test'
import { LOG_BACKLOG_BYTES, LOG_BATCH_BYTES, LOG_FILE_BATCH_BYTES } from '../../src/services/log-destination.js'

const PINO = pathToFileURL(createRequire(import.meta.url).resolve('pino')).href
const DESTINATION = pathToFileURL(join(import.meta.dirname, '..', '..', 'src', 'services', 'log-destination.ts')).href

const ROOT = join(import.meta.dirname, '..', '..')

/**
 * Writes a script whose logger writes through BatchedLogDestination on stdout, then runs `body`
 * (lines of code); `log`, `BATCH`, `BACKLOG` and `writeSync` are in scope. Returns its path, for
 * `node --import tsx` with the repository as working directory.
 */
function childScript (t: TestContext, body: string[]): string {
  const dir = mkdtempSync(join(tmpdir(), 'animal-store-log-destination-'))
  t.after(() => { rmSync(dir, { recursive: true, force: true }) })
  const script = join(dir, 'child.mts')
  writeFileSync(script, [
    `import { pino } from '${PINO}'`,
    `import { BatchedLogDestination, LOG_BATCH_BYTES as BATCH, LOG_BACKLOG_BYTES as BACKLOG } from '${DESTINATION}'`,
    "import { writeSync } from 'node:fs'",
    'const log = pino({ base: undefined, timestamp: false }, new BatchedLogDestination())',
    ...body
  ].join('\n'))
  return script
}

/**
 * Runs `body` in a process of its own (childScript) whose stdout is a pipe, as under a supervisor.
 * Resolves with the lines it printed once it has exited; `onLine` sees each line as it arrives.
 */
async function inChild (t: TestContext, body: string, onLine: (line: string, kill: () => void) => void = () => {}): Promise<{ lines: string[], code: number | null, signal: NodeJS.Signals | null }> {
  const child = spawn(process.execPath, ['--import', 'tsx', childScript(t, [body])], { cwd: ROOT, stdio: ['ignore', 'pipe', 'inherit'] })
  t.after(() => { child.kill('SIGKILL') })
  const lines: string[] = []
  createInterface({ input: child.stdout }).on('line', (line) => { lines.push(line); onLine(line, () => child.kill('SIGKILL')) })
  return await new Promise((resolve) => child.on('close', (code, signal) => { resolve({ lines, code, signal }) }))
}

/**
 * Runs a script (childScript) in a process of its own with every stdio a pipe; killed when the test ends. `exited`
 * resolves with its exit code and all it wrote on stderr, once it has exited and its stderr is read to the end.
 */
function runScript (t: TestContext, script: string, nodeFlags: string[] = []): { child: ChildProcessWithoutNullStreams, exited: Promise<{ code: number | null, stderr: string }> } {
  const child = spawn(process.execPath, [...nodeFlags, '--import', 'tsx', script], { cwd: ROOT, stdio: ['pipe', 'pipe', 'pipe'] })
  t.after(() => { child.kill('SIGKILL') })
  let stderr = ''
  child.stderr.setEncoding('utf8').on('data', (chunk: string) => { stderr += chunk })
  const exited = Promise.all([once(child, 'exit'), once(child.stderr, 'close')]).then(([[code]]) => ({ code: code as number | null, stderr }))
  return { child, exited }
}

const numbered = (lines: string[]): number[] => lines.map((line) => (JSON.parse(line) as { n: number }).n)
const upTo = (count: number): number[] => Array.from({ length: count }, (_, index) => index)

test('log lines', { timeout: 60_000 }, async (t) => {
  await t.test('of a quiet process are written within the flush interval, without waiting for a full batch or for exit', async (t) => {
    // The child logs one line and idles (exiting by itself after 30 s). The parent kills it outright as soon as the line
    // arrives: SIGKILL runs no exit hook, so the line came from the periodic hand-over.
    const { lines, signal } = await inChild(t, "log.info({ n: 0 }, 'alone'); setTimeout(() => process.exit(0), 30_000)", (_line, kill) => { kill() })
    assert.deepEqual(numbered(lines), [0])
    assert.equal(signal, 'SIGKILL')
  })

  await t.test('logged just before process.exit() are all written, in order, even while the thread pool is busy', async (t) => {
    // Four key derivations keep all four of libuv's threads busy for a while: a destination that wrote in that pool
    // would still hold the first batch when process.exit() writes the last one, and lose it or write it last.
    const { lines, code } = await inChild(t, [
      "const { pbkdf2 } = await import('node:crypto')",
      "for (let i = 0; i < 4; i++) pbkdf2('secret', 'salt', 1_000_000, 32, 'sha256', () => {})",
      'for (let n = 0; n < 1000; n++) log.info({ n }, "line")',
      'process.exit(3)'
    ].join('\n'))
    assert.equal(code, 3)
    assert.deepEqual(numbered(lines), upTo(1000))
  })

  await t.test('still gathered when the process runs out of work are written before it ends', async (t) => {
    const { lines, code } = await inChild(t, 'for (let n = 0; n < 10; n++) log.info({ n }, "line")')
    assert.equal(code, 0)
    assert.deepEqual(numbered(lines), upTo(10))
  })

  await t.test('filling several batches arrive whole and in order', async (t) => {
    // Each line is about 1 KB: the 2,000 of them fill about thirty batches.
    const { lines, code } = await inChild(t, 'for (let n = 0; n < 2000; n++) log.info({ n, pad: "x".repeat(1000) }, "line")')
    assert.equal(code, 0)
    assert.ok(2000 * 1000 > 10 * LOG_BATCH_BYTES)
    assert.deepEqual(numbered(lines), upTo(2000))
  })
})

test('a reader that stops reading the log holds no request back, and holds at most the backlog in memory', { timeout: 60_000 }, async (t) => {
  // Nobody reads the child's stdout: the pipe fills after 64 KB. The child logs about twice the backlog in 1 KB lines,
  // then counts the turns its event loop still makes. A destination that waited for the pipe would make none.
  const script = childScript(t, [
    'let n = 0',
    'const pad = "x".repeat(1000)',
    'const more = () => { for (let i = 0; i < 1000; i++) log.info({ n: n++, pad }, "line"); if (n * 1000 < 2 * BACKLOG) setImmediate(more); else turns() }',
    'let turn = 0',
    "const turns = () => { if (++turn < 100) setTimeout(turns, 1); else { globalThis.gc(); writeSync(2, 'turned ' + turn + ' times; held ' + (process.memoryUsage().heapUsed - before) + '\\n'); process.exit(0) } }",
    'globalThis.gc()',
    'const before = process.memoryUsage().heapUsed',
    'more()'
  ])
  const { child, exited } = runScript(t, script, ['--expose-gc'])
  child.stdout.pause()
  await once(child, 'exit')
  child.stdout.destroy()
  const { code, stderr } = await exited
  assert.equal(code, 0, stderr)
  assert.match(stderr, /log lines dropped: standard output has taken none of the last \d+ bytes\n/)
  assert.equal(stderr.match(/log lines dropped/g)?.length, 1, 'said once while dropping')
  const [, turns, held] = /turned (\d+) times; held (-?\d+)/.exec(stderr) ?? []
  assert.equal(Number(turns), 100)
  // What waits for the reader is the backlog and little more: without the bound it would be all that was logged.
  assert.ok(Number(held) < 1.5 * LOG_BACKLOG_BYTES, `the heap grew by ${held} bytes after logging ${2 * LOG_BACKLOG_BYTES} bytes that nobody read`)
})

test('a reader that lags drops lines in one stretch, said once when it starts and once, with the count, when lines are written again', { timeout: 60_000 }, async (t) => {
  // The output is a stream that takes a batch only when the script says so. The script logs twice the backlog, lets the
  // output take one batch, and logs as much again: a backlog that let a batch in whenever one left would stop dropping
  // and start again, with a gap in the log and a line on stderr each time. Then the output takes everything.
  const script = childScript(t, [
    "const { Writable } = await import('node:stream')",
    'const pending = []',
    'let written = ""',
    'const out = new Writable({ decodeStrings: false, write (chunk, _encoding, done) { pending.push(() => { written += chunk; done() }) } })',
    'const slow = new BatchedLogDestination(out)',
    'const slowLog = pino({ base: undefined, timestamp: false }, slow)',
    'let n = 0',
    'const pad = "x".repeat(1000)',
    'const fill = () => { for (let i = 0; i < 2 * BACKLOG / 1000; i++) slowLog.info({ n: n++, pad }, "line") }',
    'const takeAll = async () => {',
    '  let done = false',
    '  slow.flush(() => { done = true })',
    '  const deadline = Date.now() + 20_000',
    '  while (!done && Date.now() < deadline) { pending.shift()?.(); await new Promise((resolve) => setImmediate(resolve)) }',
    '}',
    'fill()',
    'pending.shift()()',
    'await new Promise((resolve) => setImmediate(resolve))',
    'fill()',
    'await takeAll()',
    'slowLog.info({ n: n++ }, "after")',
    'await takeAll()',
    'const numbers = written.split("\\n").filter(Boolean).map((line) => JSON.parse(line).n)',
    "writeSync(2, 'numbers ' + JSON.stringify({ count: numbers.length, first: numbers[0], last: numbers.at(-1), total: n }) + '\\n')",
    'let runs = 1',
    'for (let i = 1; i < numbers.length; i++) if (numbers[i] !== numbers[i - 1] + 1) runs++',
    "writeSync(2, 'runs ' + runs + '\\n')"
  ])
  const { code, stderr } = await runScript(t, script).exited
  assert.equal(code, 0, stderr)
  assert.equal(stderr.match(/log lines dropped: /g)?.length, 1, stderr)
  const [, dropped] = /log lines written again: (\d+) bytes of lines were dropped while standard output lagged\n/.exec(stderr) ?? []
  assert.ok(Number(dropped) > 2 * LOG_BACKLOG_BYTES, stderr)
  const { count, first, last, total } = JSON.parse(/numbers (.*)\n/.exec(stderr)?.[1] ?? '{}') as { count: number, first: number, last: number, total: number }
  // What was written is the run before the gap, which starts at the first line, and the line logged after it.
  assert.equal(first, 0)
  assert.equal(last, total - 1)
  assert.ok(count < total)
  assert.match(stderr, /runs 2\n/)
})

test('processes sharing one standard output, as the workers of a cluster do, never write into each other\'s lines, even while the reader lags', { timeout: 60_000 }, async (t) => {
  // Two processes inherit one pipe from a shell and each logs 4,000 lines of about 300 bytes at once. The parent reads
  // nothing until both have logged everything, so the pipe is full and each process's writes are taken piecemeal.
  // A write of more than PIPE_BUF (4,096) bytes that a full pipe takes in part lets the other process write in between,
  // in the middle of a line.
  const script = childScript(t, [
    'const who = process.argv[2]',
    'const pad = who.repeat(250)',
    'for (let n = 0; n < 4000; n++) log.info({ who, n, pad }, "line")',
    "writeSync(2, 'logged\\n')"
  ])
  const node = `'${process.execPath}' --import tsx '${script}'`
  const shell = spawn('sh', ['-c', `${node} a & ${node} b & wait`], { cwd: ROOT, stdio: ['ignore', 'pipe', 'pipe'] })
  t.after(() => { shell.kill('SIGKILL') })
  let logged = 0
  let stderr = ''
  await new Promise<void>((resolve, reject) => {
    shell.stderr.setEncoding('utf8').on('data', (chunk: string) => {
      stderr += chunk
      logged = stderr.split('logged\n').length - 1
      if (logged === 2) resolve()
    })
    shell.on('exit', () => { reject(new Error(`exited before both processes had logged: ${stderr}`)) })
  })
  const lines: string[] = []
  createInterface({ input: shell.stdout }).on('line', (line) => { lines.push(line) })
  const [code] = await once(shell, 'close') as [number | null]
  assert.equal(code, 0, stderr)
  const broken = lines.filter((line) => { try { JSON.parse(line); return false } catch { return true } })
  assert.deepEqual(broken.map((line) => line.slice(0, 80)), [], `${broken.length} of ${lines.length} lines are not JSON`)
  for (const who of ['a', 'b']) {
    assert.deepEqual(lines.map((line) => JSON.parse(line) as { who: string, n: number }).filter((line) => line.who === who).map(({ n }) => n), upTo(4000), who)
  }
})

test('a reader that goes away costs the lines that follow, never the process', { timeout: 60_000 }, async (t) => {
  // The parent reads the child's first line and closes its end of the pipe; the child goes on logging, so its next
  // write fails with EPIPE. Unhandled, that error would end the child.
  const script = childScript(t, [
    'log.info({ n: 0 }, "first"); log.flush()',
    "process.stdin.once('data', () => {",
    '  let n = 1',
    "  const more = () => { for (let i = 0; i < 100; i++) log.info({ n: n++ }, 'line'); if (n < 20_000) setTimeout(more, 1); else { writeSync(2, 'still here\\n'); process.exit(0) } }",
    '  more()',
    '})'
  ])
  const { child, exited } = runScript(t, script)
  const [first] = await once(createInterface({ input: child.stdout }), 'line') as [string]
  assert.deepEqual(numbered([first]), [0])
  child.stdout.destroy()
  child.stdin.end('go on\n')
  const { code, stderr } = await exited
  assert.equal(code, 0, stderr)
  assert.match(stderr, /^log lines dropped from now on: standard output failed \(write EPIPE\)\nstill here\n$/)
})

/**
 * Runs `body` in a process of its own (childScript) whose stdout is the file at `output` (or a device), opened as a
 * shell's `>` opens it. Resolves with its exit code and stderr once it has exited.
 */
async function inChildWritingTo (t: TestContext, output: string, body: string, fileSizeLimitBytes?: number): Promise<{ code: number | null, stderr: string }> {
  const fd = openSync(output, 'w')
  try {
    const script = childScript(t, [body])
    // A file size limit (RLIMIT_FSIZE, in 512-byte blocks) is set by a shell, as an operator's would set it.
    const child = fileSizeLimitBytes === undefined
      ? spawn(process.execPath, ['--import', 'tsx', script], { cwd: ROOT, stdio: ['ignore', fd, 'pipe'] })
      : spawn('sh', ['-c', `ulimit -f ${fileSizeLimitBytes / 512} && exec '${process.execPath}' --import tsx '${script}'`], { cwd: ROOT, stdio: ['ignore', fd, 'pipe'] })
    t.after(() => { child.kill('SIGKILL') })
    let stderr = ''
    child.stderr?.setEncoding('utf8').on('data', (chunk: string) => { stderr += chunk })
    const [code] = await once(child, 'close') as [number | null]
    return { code, stderr }
  } finally {
    closeSync(fd)
  }
}

test('log lines written to a file', { timeout: 60_000 }, async (t) => {
  const dir = mkdtempSync(join(tmpdir(), 'animal-store-log-file-'))
  t.after(() => { rmSync(dir, { recursive: true, force: true }) })
  const file = join(dir, 'service.log')
  const fileLines = (): string[] => readFileSync(file, 'utf8').split('\n').filter((line) => line !== '')

  await t.test('arrive whole and in order, the last ones too when process.exit() follows at once', async (t) => {
    // About 1 KB a line, some with characters of two and three bytes: a batch's bytes outnumber its characters.
    const { code, stderr } = await inChildWritingTo(t, file, 'for (let n = 0; n < 2000; n++) log.info({ n, pad: (n % 7 === 0 ? "é€" : "x").repeat(400) }, "line")\nprocess.exit(3)')
    assert.equal(code, 3, stderr)
    const lines = fileLines()
    assert.deepEqual(numbered(lines), upTo(2000))
    assert.equal((JSON.parse(lines[7] as string) as { pad: string }).pad, 'é€'.repeat(400))
  })

  await t.test('of a quiet process are written without waiting for exit', async (t) => {
    const { code, stderr } = await inChildWritingTo(t, file, [
      "const { readFileSync } = await import('node:fs')",
      'log.info({ n: 0 }, "alone")',
      // The process watches its own output, and kills itself outright once the line is there.
      'const deadline = Date.now() + 20_000',
      `const look = () => { if (readFileSync(${JSON.stringify(file)}, 'utf8').includes('alone')) process.kill(process.pid, 'SIGKILL'); else if (Date.now() < deadline) setTimeout(look, 10); else process.exit(1) }`,
      'look()'
    ].join('\n'))
    // SIGKILL runs no exit hook: the line was written by the periodic hand-over.
    assert.equal(code, null, stderr)
    assert.deepEqual(numbered(fileLines()), [0])
  })

  await t.test('that a file takes only in part (its size limit) are said to be dropped, not left cut short in silence', async (t) => {
    // One line of exactly one file batch: 16,384 characters, 16,385 bytes. The file takes 16,384 bytes, as many as the
    // batch has characters, and refuses the last one (EFBIG).
    const { code, stderr } = await inChildWritingTo(t, file, [
      `const pad = 'é' + 'x'.repeat(${LOG_FILE_BATCH_BYTES} - 42)`,
      'log.info({ n: 0, pad }, "line")',
      // The next line hands the full batch over.
      'log.info({ n: 1 }, "line")',
      'process.exit(0)'
    ].join('\n'), LOG_FILE_BATCH_BYTES)
    assert.equal(code, 0, stderr)
    assert.equal(readFileSync(file).length, LOG_FILE_BATCH_BYTES)
    assert.match(stderr, new RegExp(`^log lines dropped from now on: standard output failed \\(standard output took ${LOG_FILE_BATCH_BYTES} bytes of a batch of ${LOG_FILE_BATCH_BYTES + 1}\\)\\n$`))
  })

  await t.test('that cannot be written (a full disk) are dropped, said once, and the process goes on', { skip: !existsSync('/dev/full') && 'no /dev/full on this system' }, async (t) => {
    const { code, stderr } = await inChildWritingTo(t, '/dev/full', [
      'let n = 0',
      "const more = () => { for (let i = 0; i < 100; i++) log.info({ n: n++ }, 'line'); if (n < 5_000) setImmediate(more); else { writeSync(2, 'still here\\n'); process.exit(0) } }",
      'more()'
    ].join('\n'))
    assert.equal(code, 0, stderr)
    assert.match(stderr, /^log lines dropped from now on: standard output failed \(.*ENOSPC.*\)\nstill here\n$/)
  })
})
