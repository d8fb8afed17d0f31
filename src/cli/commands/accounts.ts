import { parseArgs } from 'node:util'
import { scryptParamsAt } from '../../core/passwords.js'
import { createAccount, resetTwoStep, setAccountPassword, verifyAccountEmail } from '../../services/accounts.js'
import { mailLinksOf } from '../../services/mail-messages.js'
import { CliError, type Command } from '../context.js'
import { withStore } from '../with-store.js'

export const accountsCreate: Command = {
  usage: 'animal-store accounts create --email E [--name N]',
  summary: 'Create an account. An email can belong to one account only.',
  run: async (args, context) => {
    const { values } = parseArgs({ args, options: { email: { type: 'string' }, name: { type: 'string' } }, strict: true })
    if (values.email === undefined) throw new CliError('--email is required')
    const email = values.email
    const account = await withStore(context, (store) => createAccount(store, { email, name: values.name }))
    context.stdout(`Created account ${account.email} (id ${account.id}).`)
    context.stdout(`Next: animal-store keys create --email ${account.email}`)
    return 0
  }
}

export const accountsSetPassword: Command = {
  usage: 'animal-store accounts set-password --email E',
  summary: 'Set the developer-portal password of an account, read from standard input (prompted without echo on a terminal). Ends its portal sessions.',
  run: async (args, context) => {
    const { values } = parseArgs({ args, options: { email: { type: 'string' } }, strict: true })
    if (values.email === undefined) throw new CliError('--email is required')
    if (context.readSecret === undefined) throw new CliError('no standard input to read the password from')
    const email = values.email
    const password = await context.readSecret('New password (at least 12 characters): ')
    if (password === '') throw new CliError('no password was given on standard input')
    const { account, endedSessions } = await withStore(context, (store, config) => setAccountPassword(store, { email, password, params: scryptParamsAt(config.passwordHashCost) }, { actor: 'cli', links: mailLinksOf(config) }))
    context.stdout(`Set the portal password of ${account.email}${endedSessions > 0 ? `; ended ${endedSessions} portal session${endedSessions === 1 ? '' : 's'}` : ''}.`)
    context.stdout('They can log in at /portal/login.')
    return 0
  }
}

/** The one option of the commands that act on one account by its email. */
function emailOption (args: string[]): string {
  const { values } = parseArgs({ args, options: { email: { type: 'string' } }, strict: true })
  if (values.email === undefined) throw new CliError('--email is required')
  return values.email
}

export const accountsReset2fa: Command = {
  usage: 'animal-store accounts reset-2fa --email E',
  summary: 'Turn off two-step verification of an account whose owner lost their authenticator (audited). They log in with their password alone.',
  run: async (args, context) => {
    const email = emailOption(args)
    const { account, removed } = await withStore(context, (store, config) => resetTwoStep(store, email, { actor: 'cli', links: mailLinksOf(config) }))
    context.stdout(removed
      ? `Turned off two-step verification of ${account.email}: they log in with their password alone, and can turn it on again in the portal.`
      : `${account.email} has no two-step verification: nothing to turn off.`)
    return 0
  }
}

export const accountsVerify: Command = {
  usage: 'animal-store accounts verify --email E',
  summary: 'Mark the email of an account verified by hand (it can then generate keys in the portal). Accounts made with this tool are verified already.',
  run: async (args, context) => {
    const email = emailOption(args)
    const { account, already } = await withStore(context, (store) => verifyAccountEmail(store, email))
    context.stdout(already ? `The email of ${account.email} was verified already.` : `Verified the email of ${account.email}: it can generate keys in the portal.`)
    return 0
  }
}
