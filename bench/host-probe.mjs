// What the host gives at this moment, measured on its own: how long an fdatasync of 4 KB
// overwritten in a preallocated file takes, and how long a fixed piece of JavaScript takes.
// Target 4 sets one against the other, and shared hosts move both by several times from one
// hour to the next, so the report prints them from the start and the end of each run.
// Usage: node bench/host-probe.mjs FILE; prints one line of JSON.
import { closeSync, fdatasyncSync, openSync, rmSync, writeSync } from 'node:fs'

const SYNCS = 300
const FILE_BYTES = 1024 * 1024
const BLOCK = Buffer.alloc(4096, 1)
const CPU_REPEATS = 7

const median = (values) => [...values].sort((a, b) => a - b)[Math.floor((values.length - 1) / 2)]
const microseconds = (since) => Number(process.hrtime.bigint() - since) / 1000

function syncMedianUs (path) {
  const fd = openSync(path, 'w+')
  try {
    writeSync(fd, Buffer.alloc(FILE_BYTES), 0, FILE_BYTES, 0)
    fdatasyncSync(fd)
    const times = []
    for (let index = 0; index < SYNCS; index++) {
      writeSync(fd, BLOCK, 0, BLOCK.length, (index * BLOCK.length) % FILE_BYTES)
      const started = process.hrtime.bigint()
      fdatasyncSync(fd)
      times.push(microseconds(started))
    }
    return median(times)
  } finally {
    closeSync(fd)
    rmSync(path, { force: true })
  }
}

/** Encoding and decoding a 20-animal page 2,000 times: the kind of work a request costs the server. */
function cpuMedianMs () {
  const page = Array.from({ length: 20 }, (_, i) => ({ id: i + 1, name: `pet ${i + 1}`, categoryId: 1, status: 'available' }))
  const times = []
  let length = 0
  for (let repeat = 0; repeat < CPU_REPEATS; repeat++) {
    const started = process.hrtime.bigint()
    for (let index = 0; index < 2000; index++) length += JSON.parse(JSON.stringify(page)).length
    times.push(microseconds(started) / 1000)
  }
  if (length === 0) throw new Error('unreachable')
  return median(times)
}

console.log(JSON.stringify({ syncUs: syncMedianUs(process.argv[2]), cpuMs: cpuMedianMs() }))
