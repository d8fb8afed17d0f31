import { Writable } from 'node:stream'

/** A stream to give a pino logger, keeping every line written to it, parsed. */
export function logLineSink (): { sink: Writable, lines: Array<Record<string, unknown>> } {
  const lines: Array<Record<string, unknown>> = []
  const sink = new Writable({
    write (chunk: Buffer, _encoding, done) {
      for (const line of chunk.toString().split('\n').filter(Boolean)) lines.push(JSON.parse(line) as Record<string, unknown>)
      done()
    }
  })
  return { sink, lines }
}
