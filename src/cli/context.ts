export interface CliContext {
  env: Record<string, string | undefined>
  stdout: (line: string) => void
  stderr: (line: string) => void
  /** Resolves once what `stdout` took so far is written: false when standard output was closed first. */
  written?: () => Promise<boolean>
  /** Reads a secret (a password) from standard input, prompting on a terminal without echo. */
  readSecret?: (prompt: string) => Promise<string>
  /** Progress display on stderr; `redraw` rewrites the current line on a terminal. */
  progress?: { isTerminal: boolean, redraw: (text: string) => void }
}

/** A failure explained to the user: printed on stderr, exit code 1, no stack trace. */
export class CliError extends Error {}

export interface Command {
  usage: string
  summary: string
  /** More for `--help`: the options, what is printed, the shape of --json output. */
  description?: string
  run: (args: string[], context: CliContext) => Promise<number>
}
