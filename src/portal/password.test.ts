import { test } from 'node:test'
import assert from 'node:assert/strict'
import { scryptParamsAt } from '../core/passwords.js'
import { PasswordHasher } from './password.js'

test('PasswordHasher hashes at the parameters it is given, and a missing hash never matches', async () => {
  const hasher = new PasswordHasher(scryptParamsAt(12))
  const client = { ip: '192.0.2.1', kind: 'log-in' } as const
  const encoded = await hasher.forClient(client, async (passwords) => await passwords.hash('correct horse battery'))
  assert.match(encoded, /^\$scrypt\$ln=12,r=8,p=1\$/)
  await hasher.forClient(client, async (passwords) => {
    assert.equal(await passwords.verify('correct horse battery', encoded), true)
    assert.equal(await passwords.verify('correct horse batterY', encoded), false)
    assert.equal(await passwords.verify('correct horse battery', null), false)
  })
})
