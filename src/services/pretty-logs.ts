import type { DestinationStream } from 'pino'

/**
 * How a line reads for a person: the local time, the level and the message, then any other field
 * as JSON on the same line, so that the start-up line is the one line the README shows. The
 * process id and the host name say nothing to someone at a terminal.
 */
export const PRETTY_OPTIONS = { translateTime: 'SYS:HH:MM:ss.l', ignore: 'pid,hostname', singleLine: true, sync: true } as const

/**
 * The logger's destination when a person reads the lines: pino-pretty's stream, which takes the
 * JSON lines pino writes (the access log's included) and prints them readably on stdout. Written
 * synchronously: a terminal is read as fast as it is written, and no line waits to be lost at exit.
 */
export async function prettyDestination (): Promise<DestinationStream> {
  const { default: pretty } = await import('pino-pretty')
  return pretty({ ...PRETTY_OPTIONS })
}
