import { readFileSync } from 'node:fs'
import { closestMatch } from 'leven'
import { ConfigError, loadConfig, type Config } from '../config.js'
import { AccountsError } from '../services/accounts.js'
import { DuplicateEmailError } from '../storage/store.js'
import { accountsCreate, accountsReset2fa, accountsSetPassword, accountsVerify } from './commands/accounts.js'
import { audit } from './commands/audit.js'
import { backup } from './commands/backup.js'
import { configCommand } from './commands/config.js'
import { keysCreate, keysList, keysRevoke, keysRoll, keysUsage } from './commands/keys.js'
import { mailOutbox } from './commands/mail.js'
import { migrate } from './commands/migrate.js'
import { seed } from './commands/seed.js'
import { serveCommand } from './commands/serve.js'
import { CliError, type CliContext, type Command } from './context.js'
import { explainFailure } from './explain-failure.js'

const COMMANDS: Record<string, Command> = {
  serve: serveCommand,
  migrate,
  config: configCommand,
  'accounts create': accountsCreate,
  'accounts set-password': accountsSetPassword,
  'accounts reset-2fa': accountsReset2fa,
  'accounts verify': accountsVerify,
  'keys create': keysCreate,
  'keys list': keysList,
  'keys revoke': keysRevoke,
  'keys roll': keysRoll,
  'keys usage': keysUsage,
  'mail outbox': mailOutbox,
  audit,
  seed,
  backup
}

/** Read at run time: src/cli/ and the bundle in dist/cli/ both sit two folders below package.json. */
function version (): string {
  const pkg = JSON.parse(readFileSync(new URL('../../package.json', import.meta.url), 'utf8')) as { version: string }
  return pkg.version
}

/** The words of the command as typed: those before the first option, at most two (options are never part of it). */
function commandWords (argv: string[]): string[] {
  const end = argv.findIndex((arg) => arg.startsWith('-'))
  const words = argv.slice(0, end === -1 ? 2 : Math.min(end, 2))
  return words.length > 0 ? words : argv.slice(0, 1)
}

/** The command a mistyped one most likely meant, or every command of the group it named. */
function suggestionFor (words: string[]): string | undefined {
  const names = Object.keys(COMMANDS)
  const [first = ''] = words
  const group = names.filter((name) => name.startsWith(`${first} `))
  const closest = (words.length > 1 ? closestMatch(words.join(' '), names, { maxDistance: 3 }) : undefined) ??
    (group.length > 0 ? undefined : closestMatch(first, names, { maxDistance: 2 }))
  if (closest !== undefined) return `did you mean: animal-store ${closest}`
  return group.length > 0 ? `${first} has these commands: ${group.join(', ')}` : undefined
}

function configOrUndefined (env: CliContext['env']): Readonly<Config> | undefined {
  try {
    return loadConfig(env)
  } catch {
    return undefined
  }
}

function overview (): string {
  const width = 56
  const lines = Object.values(COMMANDS).map((command) => command.usage.length <= width
    ? `  ${command.usage.padEnd(width)} ${command.summary}`
    : `  ${command.usage}\n  ${''.padEnd(width)} ${command.summary}`)
  return [
    'Usage: animal-store <command> [options]',
    '',
    'Commands:',
    ...lines,
    '',
    'Every command reads the same environment as the server (DATABASE_URL, …) and accepts --help.',
    'animal-store --version prints the version.'
  ].join('\n')
}

/** Runs one CLI invocation and returns its exit code. */
export async function runCli (argv: string[], context: CliContext): Promise<number> {
  const [first, second] = argv
  if (first === undefined || first === '--help' || first === '-h' || first === 'help') {
    context.stdout(overview())
    return first === undefined ? 1 : 0
  }
  if (first === '--version' || first === '-v' || first === 'version') {
    context.stdout(`animal-store ${version()}`)
    return 0
  }
  const name = COMMANDS[first] ? first : `${first} ${second ?? ''}`
  const command = COMMANDS[name]
  if (command === undefined) {
    const group = Object.keys(COMMANDS).filter((key) => key.startsWith(`${first} `))
    if (group.length > 0 && (second === undefined || second === '--help' || second === '-h')) {
      context.stdout(['Usage:', ...group.map((key) => `  ${COMMANDS[key]?.usage ?? key}  ${COMMANDS[key]?.summary ?? ''}`)].join('\n'))
      return second === undefined ? 1 : 0
    }
    const words = commandWords(argv)
    const suggestion = suggestionFor(words)
    context.stderr(suggestion === undefined
      ? `unknown command: ${words.join(' ')}\n\n${overview()}`
      : `unknown command: ${words.join(' ')}; ${suggestion} (animal-store --help lists every command)`)
    return 1
  }
  const args = argv.slice(name.split(' ').length)
  if (args.includes('--help') || args.includes('-h')) {
    context.stdout(`Usage: ${command.usage}\n\n${command.summary}${command.description === undefined ? '' : `\n\n${command.description}`}`)
    return 0
  }
  try {
    return await command.run(args, context)
  } catch (error) {
    if (error instanceof CliError || error instanceof AccountsError || error instanceof DuplicateEmailError || error instanceof ConfigError) {
      context.stderr(`error: ${error.message}`)
      return 1
    }
    if (error instanceof TypeError && (error as { code?: string }).code?.startsWith('ERR_PARSE_ARGS')) {
      // One line, as every failure: the message, then where to read how the command is used.
      context.stderr(`error: ${error.message.replaceAll('\n', ' ')} (usage: ${command.usage}; more with --help)`)
      return 1
    }
    context.stderr(`error: ${explainFailure(error, configOrUndefined(context.env)) ?? (error as Error).message}`)
    return 1
  }
}
