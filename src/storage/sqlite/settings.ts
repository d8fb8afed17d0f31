import type Database from 'better-sqlite3'
import type { Store } from '../store.js'
import { preparedOnFirstUse } from './statements.js'

const prepare = (db: Database.Database) => ({
  insertSetting: db.prepare('INSERT INTO settings (name, value) VALUES (?, ?) ON CONFLICT (name) DO NOTHING'),
  settingByName: db.prepare('SELECT value FROM settings WHERE name = ?').pluck()
})

/** Store.setting: the value first written under the name, by whichever instance wrote first. */
export function settingOf (db: Database.Database): Store['setting'] {
  const sql = preparedOnFirstUse(db, prepare)
  return async (name, createValue) => {
    sql().insertSetting.run(name, createValue())
    return sql().settingByName.get(name) as string
  }
}
