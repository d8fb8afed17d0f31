import type { Store } from '../store.js'
import type { Connection } from './connection.js'

/** Store.setting: the value first written under the name, by whichever instance wrote first. */
export function settingOf ({ query }: Connection): Store['setting'] {
  return async (name, createValue) => {
    await query('INSERT INTO settings (name, value) VALUES ($1, $2) ON CONFLICT (name) DO NOTHING', [name, createValue()])
    return (await query<{ value: string }>('SELECT value FROM settings WHERE name = $1', [name]))[0]?.value ?? ''
  }
}
