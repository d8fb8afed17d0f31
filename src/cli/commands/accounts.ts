import { parseArgs } from 'node:util'
import { createAccount } from '../../services/accounts.js'
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
