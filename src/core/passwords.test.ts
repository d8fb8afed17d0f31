import { test } from 'node:test'
import assert from 'node:assert/strict'
import {
  encodeScryptHash,
  HASH_COST_BOUNDS,
  hashPassword,
  MIN_PASSWORD_LENGTH,
  needsRehash,
  parseScryptHash,
  passwordProblem,
  SCRYPT_PARAMS,
  scryptMaxmem,
  scryptParamsAt,
  verifyPassword
} from './passwords.js'

const FAST = { logN: 10, r: 8, p: 1 }

test('passwordProblem asks for 12 to 1024 characters, counted as code points after NFKC', () => {
  assert.equal(MIN_PASSWORD_LENGTH, 12)
  assert.match(passwordProblem('short-pass1') ?? '', /at least 12 characters/)
  assert.equal(passwordProblem('twelve chars'), undefined)
  assert.equal(passwordProblem('🐈'.repeat(12)), undefined, 'twelve cats are twelve characters, not 24 UTF-16 units')
  assert.match(passwordProblem('🐈'.repeat(11)) ?? '', /at least 12/)
  assert.match(passwordProblem('x'.repeat(1025)) ?? '', /at most 1024/)
})

test('the default parameters are the OWASP ones and maxmem admits them', () => {
  assert.deepEqual({ ...SCRYPT_PARAMS }, { logN: 17, r: 8, p: 1 })
  assert.ok(scryptMaxmem(SCRYPT_PARAMS) > 128 * 8 * 2 ** 17, 'above the 128 MiB that N=2^17, r=8 needs')
})

test('hashPassword writes a PHC string with a 16-byte salt and the parameters, and a fresh salt every time', async () => {
  const first = await hashPassword('correct horse battery', FAST)
  const second = await hashPassword('correct horse battery', FAST)
  assert.match(first, /^\$scrypt\$ln=10,r=8,p=1\$[A-Za-z0-9+/]{22}\$[A-Za-z0-9+/]{43}$/)
  assert.notEqual(first, second)
  assert.equal(parseScryptHash(first)?.salt.length, 16)
  assert.equal(first.includes('correct horse'), false)
})

test('verifyPassword accepts the password and nothing else', async () => {
  const encoded = await hashPassword('correct horse battery', FAST)
  assert.equal(await verifyPassword('correct horse battery', encoded, FAST), true)
  assert.equal(await verifyPassword('correct horse batterY', encoded, FAST), false)
  assert.equal(await verifyPassword('', encoded, FAST), false)
})

test('verifyPassword normalises Unicode: a precomposed and a decomposed é are the same password', async () => {
  const encoded = await hashPassword('caf\u00e9 au lait 123', FAST)
  assert.equal(await verifyPassword('cafe\u0301 au lait 123', encoded, FAST), true)
})

test('the default parameters hash and verify (N=2^17)', async () => {
  const encoded = await hashPassword('a real password here', SCRYPT_PARAMS)
  assert.match(encoded, /^\$scrypt\$ln=17,r=8,p=1\$/)
  assert.equal(await verifyPassword('a real password here', encoded, SCRYPT_PARAMS), true)
  assert.equal(needsRehash(encoded, SCRYPT_PARAMS), false)
})

test('a configured cost changes N alone, and a hash made at it is checked at it and kept', async () => {
  const params = scryptParamsAt(HASH_COST_BOUNDS.min)
  assert.deepEqual({ ...params }, { logN: 12, r: 8, p: 1 })
  const encoded = await hashPassword('a real password here', params)
  assert.match(encoded, /^\$scrypt\$ln=12,r=8,p=1\$/)
  assert.equal(await verifyPassword('a real password here', encoded, SCRYPT_PARAMS), true, 'checked at the parameters it names')
  assert.equal(needsRehash(encoded, params), false)
  assert.equal(needsRehash(encoded, SCRYPT_PARAMS), true, 'remade once the cost is raised')
  const highest = encodeScryptHash({ params: scryptParamsAt(HASH_COST_BOUNDS.max), salt: Buffer.alloc(16, 1), key: Buffer.alloc(32, 2) })
  assert.ok(parseScryptHash(highest), 'a hash at the highest cost an operator may set is read back')
})

test('verifyPassword refuses unreadable or out-of-bounds strings without throwing', async () => {
  const salt = Buffer.alloc(16, 1)
  const key = Buffer.alloc(32, 2)
  for (const encoded of ['', 'plain text', '$scrypt$ln=30,r=8,p=1$AAAAAAAAAAAAAAAAAAAAAA$' + 'A'.repeat(43), encodeScryptHash({ params: { logN: 17, r: 99, p: 1 }, salt, key })]) {
    assert.equal(parseScryptHash(encoded), undefined, encoded)
    assert.equal(await verifyPassword('whatever password', encoded, FAST), false, encoded)
  }
})

test('needsRehash flags hashes made with other parameters', () => {
  const salt = Buffer.alloc(16, 1)
  const key = Buffer.alloc(32, 2)
  assert.equal(needsRehash(encodeScryptHash({ params: { logN: 14, r: 8, p: 1 }, salt, key }), SCRYPT_PARAMS), true)
  assert.equal(needsRehash(encodeScryptHash({ params: { ...SCRYPT_PARAMS }, salt, key }), SCRYPT_PARAMS), false)
  assert.equal(needsRehash(encodeScryptHash({ params: { logN: 14, r: 8, p: 1 }, salt, key }), scryptParamsAt(14)), false)
  assert.equal(needsRehash(encodeScryptHash({ params: { logN: 14, r: 16, p: 1 }, salt, key }), scryptParamsAt(14)), true)
  assert.equal(needsRehash('plain text', SCRYPT_PARAMS), true)
  assert.deepEqual(parseScryptHash(encodeScryptHash({ params: { logN: 14, r: 8, p: 1 }, salt, key })), { params: { logN: 14, r: 8, p: 1 }, salt, key })
})
