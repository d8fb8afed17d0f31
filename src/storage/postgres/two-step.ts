import type { TwoStepRepository } from '../store.js'
import type { Connection } from './connection.js'
import { insertMail } from './mail-outbox.js'

interface TwoStepDbRow { account_id: string, secret_sealed: string, enabled_at: string | null, last_step: string }

export function twoStepRepository ({ query, transaction }: Connection): TwoStepRepository {
  return {
    find: async (accountId) => {
      const [row] = await query<TwoStepDbRow>('SELECT account_id, secret_sealed, enabled_at, last_step FROM two_step WHERE account_id = $1', [accountId])
      return row && {
        accountId: Number(row.account_id),
        secretSealed: row.secret_sealed,
        enabledAt: row.enabled_at === null ? null : new Date(Number(row.enabled_at)),
        lastStep: Number(row.last_step)
      }
    },
    startSetup: async (accountId, secretSealed) =>
      (await query<{ account_id: string }>(`INSERT INTO two_step (account_id, secret_sealed) VALUES ($1, $2)
        ON CONFLICT (account_id) DO UPDATE SET secret_sealed = excluded.secret_sealed WHERE two_step.enabled_at IS NULL
        RETURNING account_id`, [accountId, secretSealed])).length === 1,
    enable: async (accountId, secretSealed, step, at, hashes, mail) => await transaction(async (client) => {
      const enabled = await client.query('UPDATE two_step SET enabled_at = $1, last_step = $2 WHERE account_id = $3 AND secret_sealed = $4 AND enabled_at IS NULL',
        [at.getTime(), step, accountId, secretSealed])
      if (enabled.rowCount !== 1) return false
      await client.query('DELETE FROM recovery_codes WHERE account_id = $1', [accountId])
      await client.query('INSERT INTO recovery_codes (account_id, code_hash) SELECT $1, unnest($2::text[])', [accountId, [...hashes]])
      if (mail !== undefined) await insertMail(client, mail, at.getTime())
      return true
    }),
    useStep: async (accountId, step) =>
      (await query<{ account_id: string }>('UPDATE two_step SET last_step = $1 WHERE account_id = $2 AND enabled_at IS NOT NULL AND last_step < $1 RETURNING account_id',
        [step, accountId])).length === 1,
    unusedRecoveryCodes: async (accountId) =>
      (await query<{ code_hash: string }>('SELECT code_hash FROM recovery_codes WHERE account_id = $1 AND used_at IS NULL', [accountId])).map((row) => row.code_hash),
    useRecoveryCode: async (accountId, codeHash, at) =>
      (await query<{ code_hash: string }>('UPDATE recovery_codes SET used_at = $1 WHERE account_id = $2 AND code_hash = $3 AND used_at IS NULL RETURNING code_hash',
        [at.getTime(), accountId, codeHash])).length === 1,
    remove: async (accountId, mail) => await transaction(async (client) => {
      await client.query('DELETE FROM recovery_codes WHERE account_id = $1', [accountId])
      const removed = (await client.query('DELETE FROM two_step WHERE account_id = $1', [accountId])).rowCount === 1
      if (removed && mail !== undefined) await insertMail(client, mail, Date.now())
      return removed
    })
  }
}
