import { describe, test, type TestContext } from 'node:test'
import assert from 'node:assert/strict'
import { generateApiKey } from '../../src/core/api-keys.js'
import { openPostgresStore } from '../../src/storage/postgres/postgres-store.js'
import { openSqliteStore } from '../../src/storage/sqlite/sqlite-store.js'
import { DuplicateEmailError, KeyLimitError, type Store } from '../../src/storage/store.js'
import { tempDir } from '../helpers/build-app.js'
import { createTestSchema, postgresAvailable } from '../helpers/postgres.js'

const ENGINES: Array<{ name: string, open: (t: TestContext) => Promise<Store | undefined> }> = [
  {
    name: 'sqlite',
    open: async (t) => openSqliteStore(`${tempDir(t)}/store.sqlite`)
  },
  {
    name: 'postgres',
    open: async (t) => {
      if (!await postgresAvailable()) return undefined
      return openPostgresStore(await createTestSchema(t), { poolSize: 4, onError: () => {} })
    }
  }
]

for (const engine of ENGINES) {
  describe(`store contract: ${engine.name}`, () => {
    async function openStore (t: TestContext): Promise<Store | undefined> {
      const store = await engine.open(t)
      if (store === undefined) {
        t.skip('PostgreSQL is not reachable')
        return undefined
      }
      t.after(() => store.close())
      await store.migrate()
      return store
    }

    test('migrate applies every version once and is idempotent', async (t) => {
      const store = await openStore(t)
      if (!store) return
      assert.deepEqual(await store.migrate(), [])
    })

    test('concurrent inserts get distinct increasing ids and keep every field exactly', async (t) => {
      const store = await openStore(t)
      if (!store) return
      const created = await Promise.all([
        store.pets.insert({ name: 'Rex', categoryId: 1, status: 'available' }),
        store.pets.insert({ name: '  spaced  ', categoryId: 9223372036854775807n }),
        store.pets.insert({ name: 'Ünïcødé 🐈', categoryId: -9223372036854775808n, status: 'sold' }),
        store.pets.insert({ name: 'quote " and \\ backslash', categoryId: 0 })
      ])
      assert.deepEqual(created.map((pet) => pet.id), [1, 2, 3, 4])
      assert.deepEqual(await store.pets.findById(1), { id: 1, name: 'Rex', categoryId: 1, status: 'available' })
      assert.deepEqual(await store.pets.findById(2), { id: 2, name: '  spaced  ', categoryId: 9223372036854775807n })
      assert.deepEqual(await store.pets.findById(3), { id: 3, name: 'Ünïcødé 🐈', categoryId: -9223372036854775808n, status: 'sold' })
      assert.deepEqual(await store.pets.findById(4), { id: 4, name: 'quote " and \\ backslash', categoryId: 0 })
      assert.equal(await store.pets.findById(5), undefined)
    })

    test('a few hundred concurrent inserts each get the id of their own animal, after the animals already there', async (t) => {
      const store = await openStore(t)
      if (!store) return
      await store.pets.insert({ name: 'first', categoryId: 1 })
      const statuses = ['available', 'pending', 'sold', undefined] as const
      const pets = Array.from({ length: 300 }, (_, index) => ({ name: `pet ${index}`, categoryId: BigInt(index) * 30000000000000000n, status: statuses[index % 4] }))
      const created = await Promise.all(pets.map(async (pet) => await store.pets.insert(pet)))
      assert.deepEqual(created.map(({ id }) => id).sort((a, b) => a - b), Array.from({ length: 300 }, (_, index) => index + 2))
      for (const [index, { id }] of created.entries()) {
        const pet = pets[index]
        const categoryId = Number.isSafeInteger(Number(pet?.categoryId)) ? Number(pet?.categoryId) : pet?.categoryId
        assert.deepEqual(await store.pets.findById(id), { id, name: pet?.name, categoryId, ...(pet?.status !== undefined && { status: pet.status }) })
      }
    })

    test('concurrent findById calls, present and absent ids and the same id twice, each get their own animal', async (t) => {
      const store = await openStore(t)
      if (!store) return
      await store.pets.insertMany(Array.from({ length: 600 }, (_, index) => ({ name: `pet ${index + 1}`, categoryId: index + 1 })))
      const ids = [...Array.from({ length: 700 }, (_, index) => 700 - index), 5, 5, 9007199254740991]
      const found = await Promise.all(ids.map(async (id) => await store.pets.findById(id)))
      for (const [index, id] of ids.entries()) {
        assert.deepEqual(found[index], id <= 600 ? { id, name: `pet ${id}`, categoryId: id } : undefined, `id ${id}`)
      }
    })

    test('listPage returns id-ordered pages, filters by status and says whether more exist', async (t) => {
      const store = await openStore(t)
      if (!store) return
      const statuses = ['available', 'pending', 'sold', undefined] as const
      for (let i = 0; i < 10; i++) await store.pets.insert({ name: `pet ${i}`, categoryId: i, ...(statuses[i % 4] && { status: statuses[i % 4] }) })
      const first = await store.pets.listPage({ status: undefined, afterId: 0, limit: 4 })
      assert.deepEqual(first.pets.map((pet) => pet.id), [1, 2, 3, 4])
      assert.deepEqual(first.pets[0], { id: 1, name: 'pet 0', categoryId: 0, status: 'available' })
      assert.deepEqual(first.pets[3], { id: 4, name: 'pet 3', categoryId: 3 })
      assert.equal(first.hasMore, true)
      const sold = await store.pets.listPage({ status: 'sold', afterId: 0, limit: 10 })
      assert.deepEqual(sold.pets.map((pet) => pet.id), [3, 7])
      assert.equal(sold.hasMore, false)
      const tail = await store.pets.listPage({ status: 'sold', afterId: 3, limit: 1 })
      assert.deepEqual({ ids: tail.pets.map((pet) => pet.id), hasMore: tail.hasMore }, { ids: [7], hasMore: false })
      const empty = await store.pets.listPage({ status: 'pending', afterId: 10, limit: 5 })
      assert.deepEqual(empty, { pets: [], hasMore: false })
      assert.equal(await store.pets.existsAfter('sold', 3), true)
      assert.equal(await store.pets.existsAfter('sold', 7), false)
      assert.equal(await store.pets.existsAfter(undefined, 9), true)
    })

    test('accounts: one per email, found by email', async (t) => {
      const store = await openStore(t)
      if (!store) return
      const account = await store.accounts.create({ email: 'a@example.com', name: 'A' })
      assert.equal(account.email, 'a@example.com')
      await assert.rejects(store.accounts.create({ email: 'a@example.com', name: null }), DuplicateEmailError)
      assert.deepEqual(await store.accounts.findByEmail('a@example.com'), account)
      assert.equal(await store.accounts.findByEmail('b@example.com'), undefined)
    })

    test('api keys: found by hash and id, live until revoked once, revocations numbered in a feed, last use never goes back', async (t) => {
      const store = await openStore(t)
      if (!store) return
      const account = await store.accounts.create({ email: 'k@example.com', name: null })
      const generated = generateApiKey()
      const row = await store.apiKeys.create({ id: 'key_test1', accountId: account.id, label: 'ci', prefix: generated.prefix, hash: generated.hash }, { maxLive: 100 })
      assert.equal(row.live, true)
      assert.equal((await store.apiKeys.findByHash(generated.hash))?.id, 'key_test1')
      assert.deepEqual(await store.apiKeys.findById('key_test1'), row)
      assert.equal(await store.apiKeys.findByHash('0'.repeat(64)), undefined)
      assert.equal(await store.apiKeys.findById('key_nope'), undefined)
      const other = generateApiKey()
      await store.apiKeys.create({ id: 'key_test2', accountId: account.id, label: null, prefix: other.prefix, hash: other.hash }, { maxLive: 100 })
      const marker = await store.apiKeys.revocationMarker()
      assert.deepEqual(await store.apiKeys.invalidationsSince(marker), { marker, keyIds: [] })
      assert.equal(await store.apiKeys.revoke('key_test1'), 'revoked')
      assert.equal(await store.apiKeys.revoke('key_test1'), 'already_revoked')
      assert.equal(await store.apiKeys.revoke('key_nope'), 'unknown')
      assert.equal(await store.apiKeys.revoke('key_test2'), 'revoked')
      assert.equal(await store.apiKeys.revocationMarker(), marker + 2)
      assert.deepEqual(await store.apiKeys.invalidationsSince(marker), { marker: marker + 2, keyIds: ['key_test1', 'key_test2'] }, 'in order, refusals leave nothing')
      assert.deepEqual(await store.apiKeys.invalidationsSince(marker + 1), { marker: marker + 2, keyIds: ['key_test2'] })
      assert.deepEqual(await store.apiKeys.invalidationsSince(marker + 5), { marker: marker + 2, keyIds: undefined }, 'a marker from the future: forget everything')
      const revoked = await store.apiKeys.findByHash(generated.hash)
      assert.ok(revoked?.revokedAt instanceof Date)
      assert.equal(revoked.live, false)
      const later = new Date(row.createdAt.getTime() + 60_000)
      await store.apiKeys.recordLastUsed([{ id: 'key_test1', at: later }])
      await store.apiKeys.recordLastUsed([{ id: 'key_test1', at: new Date(later.getTime() - 1000) }])
      const [listed] = await store.apiKeys.listByAccount(account.id)
      assert.equal(listed?.lastUsedAt?.getTime(), later.getTime())
    })

    test('api keys: the cap on live keys holds under 300 concurrent creations, and revoked keys do not count', { timeout: 60_000 }, async (t) => {
      const store = await openStore(t)
      if (!store) return
      const account = await store.accounts.create({ email: 'cap@example.com', name: null })
      const other = await store.accounts.create({ email: 'other@example.com', name: null })
      const create = async (accountId: number, index: number): Promise<'created' | 'refused'> => {
        const generated = generateApiKey()
        try {
          await store.apiKeys.create({ id: `key_cap${String(accountId).padStart(3, '0')}${String(index).padStart(9, '0')}`, accountId, label: null, prefix: generated.prefix, hash: generated.hash }, { maxLive: 100 })
          return 'created'
        } catch (error) {
          if (error instanceof KeyLimitError) return 'refused'
          throw error
        }
      }
      for (let index = 0; index < 45; index++) await create(account.id, index)
      for (let index = 0; index < 5; index++) assert.equal(await store.apiKeys.revoke(`key_cap${String(account.id).padStart(3, '0')}${String(index).padStart(9, '0')}`), 'revoked')
      const outcomes = await Promise.all([
        ...Array.from({ length: 300 }, async (_, index) => await create(account.id, 1000 + index)),
        ...Array.from({ length: 20 }, async (_, index) => await create(other.id, index))
      ])
      assert.equal(outcomes.slice(0, 300).filter((outcome) => outcome === 'created').length, 60, '40 live keys left room for 60')
      assert.ok(outcomes.slice(300).every((outcome) => outcome === 'created'), "one account's cap does not hold up another's keys")
      const live = await store.apiKeys.pageByAccount(account.id, { live: true, limit: 1000, offset: 0 })
      assert.equal(live.total, 100)
      assert.equal(live.rows.length, 100)
      assert.ok(live.rows.every((row) => row.live))
      const ended = await store.apiKeys.pageByAccount(account.id, { live: false, limit: 2, offset: 1 })
      assert.equal(ended.total, 5)
      assert.equal(ended.rows.length, 2)
      assert.ok(ended.rows.every((row) => !row.live && row.revokedAt !== null))
      const all = await store.apiKeys.pageByAccount(account.id, { live: false, limit: 10, offset: 0 })
      const revokedTimes = all.rows.map((row) => row.revokedAt?.getTime() ?? 0)
      assert.deepEqual(revokedTimes, [...revokedTimes].sort((a, b) => b - a), 'most recently revoked first')
      assert.deepEqual(await store.apiKeys.pageByAccount(account.id, { live: false, limit: 10, offset: 50 }), { rows: [], total: 5 }, 'past the end: no rows, the total')
    })

    test('api keys: scopes and expiry as created; an expired key is not live, not counted by the cap, and listed with the ended ones', async (t) => {
      const store = await openStore(t)
      if (!store) return
      const account = await store.accounts.create({ email: 'exp@example.com', name: null })
      const make = async (id: string, terms: { scopes?: Array<'animals:read' | 'animals:write'>, expiresAt?: Date | null }) => {
        const generated = generateApiKey()
        return await store.apiKeys.create({ id, accountId: account.id, label: id, prefix: generated.prefix, hash: generated.hash, ...terms }, { maxLive: 2 })
      }
      const plain = await make('key_plain', {})
      assert.deepEqual({ scopes: plain.scopes, expiresAt: plain.expiresAt, rolledTo: plain.rolledTo }, { scopes: ['animals:read', 'animals:write'], expiresAt: null, rolledTo: null })
      const soon = new Date(Date.now() + 60_000)
      const reader = await make('key_reader', { scopes: ['animals:read'], expiresAt: soon })
      assert.deepEqual({ scopes: reader.scopes, expiresAt: reader.expiresAt?.getTime(), live: reader.live }, { scopes: ['animals:read'], expiresAt: soon.getTime(), live: true })
      await assert.rejects(make('key_third', {}), KeyLimitError, 'two live keys fill a cap of two')
      const past = await make('key_past', { expiresAt: new Date(Date.now() - 1) }).catch((error: unknown) => error)
      assert.ok(past instanceof KeyLimitError, 'the cap is checked before the insert, whatever the new key')
      assert.equal(await store.apiKeys.revoke('key_plain'), 'revoked')
      const expired = await make('key_expired', { scopes: ['animals:write'], expiresAt: new Date(Date.now() - 1000) })
      assert.equal(expired.live, false, 'a key past its expiry is not live')
      assert.equal((await store.apiKeys.findById('key_expired'))?.live, false)
      const ended = await store.apiKeys.pageByAccount(account.id, { live: false, limit: 10, offset: 0 })
      assert.equal(ended.total, 2)
      assert.deepEqual(new Set(ended.rows.map((row) => row.id)), new Set(['key_plain', 'key_expired']), 'revoked and expired keys are the ended ones')
      const live = await store.apiKeys.pageByAccount(account.id, { live: true, limit: 10, offset: 0 })
      assert.deepEqual(live.rows.map((row) => row.id), ['key_reader'])
      await make('key_second', {})
      await assert.rejects(make('key_fourth', {}), KeyLimitError, 'the expired key left room for one')
    })

    test('api keys: a roll issues a key with the same label, scopes and lifetime, ends the old one after the grace period, and records its invalidation', async (t) => {
      const store = await openStore(t)
      if (!store) return
      const account = await store.accounts.create({ email: 'roll@example.com', name: null })
      const generated = generateApiKey()
      const lifetime = 30 * 86_400_000
      const before = Date.now()
      const old = await store.apiKeys.create({
        id: 'key_old', accountId: account.id, label: 'dashboard', prefix: generated.prefix, hash: generated.hash, scopes: ['animals:read'], expiresAt: new Date(before + lifetime)
      }, { maxLive: 2 })
      const marker = await store.apiKeys.revocationMarker()
      const successor = generateApiKey()
      const rolled = await store.apiKeys.roll('key_old', { id: 'key_new', prefix: successor.prefix, hash: successor.hash }, { graceMs: 3_600_000, maxLive: 2 })
      assert.equal(rolled.outcome, 'rolled')
      if (rolled.outcome !== 'rolled') return
      assert.deepEqual({ id: rolled.key.id, label: rolled.key.label, scopes: rolled.key.scopes, live: rolled.key.live }, { id: 'key_new', label: 'dashboard', scopes: ['animals:read'], live: true })
      const newLifetime = (rolled.key.expiresAt?.getTime() ?? 0) - rolled.key.createdAt.getTime()
      assert.equal(newLifetime, (old.expiresAt?.getTime() ?? 0) - old.createdAt.getTime(), 'the same lifetime, from the roll')
      assert.equal(rolled.old.rolledTo, 'key_new')
      assert.ok(rolled.old.live, 'the old key works during its grace period')
      const graceEnd = rolled.old.expiresAt?.getTime() ?? 0
      assert.ok(graceEnd >= before + 3_600_000 && graceEnd <= Date.now() + 3_600_000, 'the old key ends an hour from the roll')
      assert.equal((await store.apiKeys.findByHash(successor.hash))?.id, 'key_new')
      assert.deepEqual(await store.apiKeys.invalidationsSince(marker), { marker: marker + 1, keyIds: ['key_old'] }, 'instances forget what they knew of the old key')

      const third = generateApiKey()
      await assert.rejects(store.apiKeys.roll('key_new', { id: 'key_third', prefix: third.prefix, hash: third.hash }, { graceMs: 0, maxLive: 2 }), KeyLimitError,
        'the old key in its grace period counts toward the cap')
      assert.equal((await store.apiKeys.findById('key_new'))?.rolledTo, null, 'a refused roll changes nothing')
      const immediate = await store.apiKeys.roll('key_old', { id: 'key_third', prefix: third.prefix, hash: third.hash }, { graceMs: 0, maxLive: 3 })
      assert.equal(immediate.outcome, 'rolled', 'a key in its grace period may be rolled again')
      if (immediate.outcome === 'rolled') assert.equal(immediate.old.live, false, 'grace 0 ends it at once')
      const fourth = generateApiKey()
      assert.equal((await store.apiKeys.roll('key_old', { id: 'key_fourth', prefix: fourth.prefix, hash: fourth.hash }, { graceMs: 0, maxLive: 10 })).outcome, 'ended')
      assert.equal((await store.apiKeys.roll('key_nope', { id: 'key_fourth', prefix: fourth.prefix, hash: fourth.hash }, { graceMs: 0, maxLive: 10 })).outcome, 'unknown')
      assert.equal(await store.apiKeys.findById('key_fourth'), undefined)
      const forever = generateApiKey()
      await store.apiKeys.create({ id: 'key_forever', accountId: account.id, label: null, prefix: forever.prefix, hash: forever.hash }, { maxLive: 10 })
      const fifth = generateApiKey()
      const rolledForever = await store.apiKeys.roll('key_forever', { id: 'key_fifth', prefix: fifth.prefix, hash: fifth.hash }, { graceMs: 86_400_000, maxLive: 10 })
      assert.ok(rolledForever.outcome === 'rolled' && rolledForever.key.expiresAt === null && rolledForever.old.expiresAt !== null,
        'a key without expiry rolls into one without expiry, and itself gets one')
    })

    test('key usage: counts added by several writers sum per key, hour, operation and outcome; old hours are deleted', async (t) => {
      const store = await openStore(t)
      if (!store) return
      const hour = new Date(Date.UTC(2026, 10, 1, 10))
      const next = new Date(hour.getTime() + 3_600_000)
      const count = (keyId: string, at: Date, operation: string, outcome: '2xx' | '4xx' | '5xx', n: number) => ({ keyId, hour: at, operation, outcome, count: n })
      await Promise.all([
        store.keyUsage.add([count('key_a', hour, 'listPets', '2xx', 3), count('key_a', hour, 'createPet', '4xx', 1)]),
        store.keyUsage.add([count('key_a', hour, 'listPets', '2xx', 4), count('key_b', hour, 'listPets', '2xx', 9)]),
        store.keyUsage.add([count('key_a', next, 'getPet', '5xx', 2)])
      ])
      await store.keyUsage.add([count('key_a', hour, 'listPets', '2xx', 1)])
      assert.deepEqual(await store.keyUsage.forKey('key_a', hour), [
        count('key_a', hour, 'createPet', '4xx', 1),
        count('key_a', hour, 'listPets', '2xx', 8),
        count('key_a', next, 'getPet', '5xx', 2)
      ])
      assert.deepEqual(await store.keyUsage.forKey('key_a', next), [count('key_a', next, 'getPet', '5xx', 2)])
      assert.equal(await store.keyUsage.deleteBefore(next), 3)
      assert.deepEqual(await store.keyUsage.forKey('key_b', hour), [])
      assert.equal((await store.keyUsage.forKey('key_a', hour)).length, 1)
    })

    test('audit: events appended with increasing ids, paged newest first per account, once-texts recorded once', async (t) => {
      const store = await openStore(t)
      if (!store) return
      const event = (accountId: number, eventType: 'key_created' | 'scope_denied', once?: string) =>
        ({ at: new Date(), event: eventType, actor: 'cli' as const, accountId, keyId: 'key_x', address: null, detail: `n${accountId}`, ...(once !== undefined && { once }) })
      for (let index = 0; index < 5; index++) assert.equal(await store.audit.append(event(1, 'key_created')), true)
      await store.audit.append(event(2, 'key_created'))
      const onces = await Promise.all([1, 2, 3].map(async () => await store.audit.append(event(1, 'scope_denied', 'scope_denied:key_x:1'))))
      assert.deepEqual(onces.filter(Boolean).length, 1, 'one of concurrent appends with the same once-text is recorded')
      const first = await store.audit.page(1, { limit: 4 })
      assert.equal(first.length, 4)
      assert.equal(first[0]?.event, 'scope_denied')
      const ids = first.map((row) => row.id)
      assert.deepEqual(ids, [...ids].sort((a, b) => b - a), 'newest first')
      const rest = await store.audit.page(1, { limit: 10, beforeId: first.at(-1)?.id })
      assert.equal(rest.length, 2)
      assert.ok(rest.every((row) => row.accountId === 1 && row.actor === 'cli' && row.keyId === 'key_x'))
      assert.equal((await store.audit.page(2, { limit: 10 })).length, 1)
    })

    test('login attempts: a progressive lock counts attempts it lets through, refuses while locked without lengthening the lock, forgets after the quiet period', async (t) => {
      const store = await openStore(t)
      if (!store) return
      const t0 = 1_800_000_000_000
      const policy = (nowMs: number) => ({ forgetBefore: new Date(nowMs - 3_600_000), lockMsAfter: (attempts: number) => (attempts < 3 ? 0 : 1000 * 2 ** (attempts - 3)) })
      const attempt = (ms: number) => store.loginAttempts.recordUnlessLocked('account:x', new Date(t0 + ms), policy(t0 + ms))
      assert.deepEqual(await attempt(0), { allowed: true, attempts: 1 })
      assert.deepEqual(await attempt(10), { allowed: true, attempts: 2 })
      assert.deepEqual(await attempt(20), { allowed: true, attempts: 3 }, 'the third attempt goes through and locks for 1 s')
      assert.deepEqual(await attempt(500), { allowed: false, lockedUntil: new Date(t0 + 1020) })
      assert.deepEqual(await attempt(900), { allowed: false, lockedUntil: new Date(t0 + 1020) }, 'refusals do not lengthen the lock')
      assert.deepEqual(await attempt(1020), { allowed: true, attempts: 4 }, 'the lock has passed at its instant')
      assert.deepEqual(await attempt(2000), { allowed: false, lockedUntil: new Date(t0 + 3020) }, 'the next lock is twice as long')
      const concurrent = await Promise.all(Array.from({ length: 10 }, async () => await attempt(3020)))
      assert.equal(concurrent.filter((result) => result.allowed).length, 1, 'concurrent attempts on a lock that just passed: one goes through')
      assert.deepEqual(await attempt(3020 + 3_600_001), { allowed: true, attempts: 1 }, 'forgotten after an hour without attempts')
      await store.loginAttempts.clear('account:x')
      assert.deepEqual(await attempt(3_700_000), { allowed: true, attempts: 1 })
      assert.deepEqual(await store.loginAttempts.recordUnlessLocked('account:y', new Date(t0), policy(t0)), { allowed: true, attempts: 1 }, 'subjects are counted apart')
    })

    test('accounts: found by id, created with or without a password hash, whose credentials are found by email', async (t) => {
      const store = await openStore(t)
      if (!store) return
      const cli = await store.accounts.create({ email: 'cli@example.com', name: 'Ops' })
      const portal = await store.accounts.create({ email: 'portal@example.com', name: null, passwordHash: '$scrypt$first' })
      assert.deepEqual(await store.accounts.findById(cli.id), cli)
      assert.deepEqual(await store.accounts.findById(portal.id), portal)
      assert.equal(await store.accounts.findById(portal.id + 1000), undefined)
      assert.deepEqual(Object.keys(portal).sort(), ['createdAt', 'email', 'emailVerifiedAt', 'id', 'name'], 'the hash never travels with the account')
      assert.deepEqual(await store.accounts.findCredentials('cli@example.com'), { accountId: cli.id, passwordHash: null })
      assert.deepEqual(await store.accounts.findCredentials('portal@example.com'), { accountId: portal.id, passwordHash: '$scrypt$first' })
      assert.equal(await store.accounts.findCredentials('nobody@example.com'), undefined)
      assert.equal(await store.accounts.setPasswordHash(cli.id, '$scrypt$set'), true)
      assert.deepEqual(await store.accounts.findCredentials('cli@example.com'), { accountId: cli.id, passwordHash: '$scrypt$set' })
      assert.equal(await store.accounts.setPasswordHash(portal.id + 1000, '$scrypt$x'), false)
      await assert.rejects(store.accounts.create({ email: 'portal@example.com', name: null, passwordHash: '$scrypt$again' }), DuplicateEmailError)
    })

    test('mail outbox: concurrent claims never hand one message out twice; a claimed message is due again after its lease', async (t) => {
      const store = await openStore(t)
      if (!store) return
      const mail = (index: number) => ({ recipient: `m${index}@example.com`, subject: 's', text: 't', html: '<p>h</p>', link: 'http://localhost/portal/keys', kind: 'test' })
      for (let index = 0; index < 12; index++) await store.mailOutbox.enqueue(mail(index))
      const now = new Date()
      const lease = new Date(now.getTime() + 60_000)
      const claims = await Promise.all([0, 1, 2, 3].map(async () => await store.mailOutbox.claimDue(now, lease, 5)))
      const ids = claims.flat().map((row) => row.id)
      assert.equal(ids.length, 12)
      assert.equal(new Set(ids).size, 12, 'no message claimed twice')
      assert.deepEqual(await store.mailOutbox.claimDue(now, lease, 5), [], 'nothing is due while leased')
      const again = await store.mailOutbox.claimDue(new Date(lease.getTime() + 1), new Date(lease.getTime() + 60_000), 20)
      assert.equal(again.length, 12, 'due again once the lease ends')
      assert.ok(again.every((row) => row.attempts === 2))
      await store.mailOutbox.markSent(again[0]?.id ?? 0, new Date())
      await store.mailOutbox.markFailed(again[1]?.id ?? 0, new Date(), 'gave up')
      assert.equal((await store.mailOutbox.list({ pendingOnly: true, limit: 50 })).length, 10)
    })

    test('account tokens: one use each, none after expiry, a newer token ends the older', async (t) => {
      const store = await openStore(t)
      if (!store) return
      const account = await store.accounts.create({ email: 'tok@example.com', name: null, passwordHash: '$scrypt$x', verification: { tokenHash: 'a'.repeat(64), expiresAt: new Date(Date.now() + 60_000), mail: (row) => ({ recipient: row.email, subject: 's', text: 't', html: 'h', link: 'l', kind: 'verify_email' }) } })
      assert.equal(account.emailVerifiedAt, null)
      const reset = (hash: string, expiresAt: Date) => store.accountTokens.issue({ tokenHash: hash, accountId: account.id, purpose: 'reset', expiresAt }, { recipient: account.email, subject: 's', text: 't', html: 'h', link: 'l', kind: 'reset_password' })
      await reset('b'.repeat(64), new Date(Date.now() + 60_000))
      await reset('c'.repeat(64), new Date(Date.now() + 60_000))
      assert.notEqual((await store.accountTokens.find('b'.repeat(64)))?.usedAt, null, 'the newer token ended the older')
      const notice = { recipient: account.email, subject: 's', text: 't', html: 'h', link: 'l', kind: 'password_reset' }
      assert.equal(await store.accountTokens.resetPassword('a'.repeat(64), new Date(), '$scrypt$y', notice), undefined, 'a verification token resets nothing')
      const [first, second] = await Promise.all([
        store.accountTokens.resetPassword('c'.repeat(64), new Date(), '$scrypt$y', notice),
        store.accountTokens.resetPassword('c'.repeat(64), new Date(), '$scrypt$z', notice)
      ])
      assert.equal([first, second].filter((result) => result !== undefined).length, 1, 'used once, however many try at once')
      assert.equal((await store.accounts.findById(account.id))?.emailVerifiedAt instanceof Date, true, 'a reset link shows the mailbox is the owner\'s')
      await reset('d'.repeat(64), new Date(Date.now() - 1))
      assert.equal(await store.accountTokens.resetPassword('d'.repeat(64), new Date(), '$scrypt$w', notice), undefined, 'expired')
      assert.equal(await store.accountTokens.verifyEmail('a'.repeat(64), new Date()), account.id)
      assert.equal(await store.accountTokens.verifyEmail('a'.repeat(64), new Date()), undefined, 'used')
    })

    test('sessions: found by token digest until deleted, extended, ended per account, purged once expired', async (t) => {
      const store = await openStore(t)
      if (!store) return
      const alice = await store.accounts.create({ email: 'alice@example.com', name: null })
      const bob = await store.accounts.create({ email: 'bob@example.com', name: null })
      const createdAt = new Date(1_800_000_000_000)
      const expiresAt = new Date(createdAt.getTime() + 3_600_000)
      await store.sessions.create({ tokenHash: 'a1', accountId: alice.id, csrfToken: 'csrf-a1', createdAt, expiresAt })
      await store.sessions.create({ tokenHash: 'a2', accountId: alice.id, csrfToken: 'csrf-a2', createdAt, expiresAt: new Date(createdAt.getTime() + 1000) })
      await store.sessions.create({ tokenHash: 'b1', accountId: bob.id, csrfToken: 'csrf-b1', createdAt, expiresAt })
      assert.deepEqual(await store.sessions.findByTokenHash('a1'), { accountId: alice.id, csrfToken: 'csrf-a1', createdAt, expiresAt, lastSeenAt: createdAt, clientAddress: null, userAgent: null })
      assert.equal(await store.sessions.findByTokenHash('nope'), undefined)

      const later = new Date(expiresAt.getTime() + 60_000)
      await store.sessions.extend('a1', later, expiresAt)
      assert.equal((await store.sessions.findByTokenHash('a1'))?.expiresAt.getTime(), later.getTime())
      assert.equal((await store.sessions.findByTokenHash('a1'))?.lastSeenAt?.getTime(), expiresAt.getTime())
      assert.deepEqual((await store.sessions.listByAccount(alice.id, createdAt)).map((row) => row.tokenHash), ['a1', 'a2'])
      assert.deepEqual((await store.sessions.listByAccount(alice.id, new Date(createdAt.getTime() + 1000))).map((row) => row.tokenHash), ['a1'], 'an expired session is not listed')

      assert.equal(await store.sessions.deleteExpired(new Date(createdAt.getTime() + 1000)), 1, 'the session expiring at that instant goes')
      assert.equal(await store.sessions.findByTokenHash('a2'), undefined)
      await store.sessions.delete('b1')
      await store.sessions.delete('b1')
      assert.equal(await store.sessions.findByTokenHash('b1'), undefined)
      await store.sessions.create({ tokenHash: 'a3', accountId: alice.id, csrfToken: 'csrf-a3', createdAt, expiresAt })
      await store.sessions.create({ tokenHash: 'b2', accountId: bob.id, csrfToken: 'csrf-b2', createdAt, expiresAt })
      assert.equal(await store.sessions.deleteByAccount(alice.id), 2)
      assert.equal(await store.sessions.findByTokenHash('a1'), undefined)
      assert.equal(await store.sessions.findByTokenHash('a3'), undefined)
      assert.equal((await store.sessions.findByTokenHash('b2'))?.accountId, bob.id, "another account's session stays")
    })

    test('two-step: a setup waits for its first code; a time step and a recovery code are each accepted once, under concurrency; removal takes both', async (t) => {
      const store = await openStore(t)
      if (!store) return
      const alice = await store.accounts.create({ email: 'alice@example.com', name: null })
      const bob = await store.accounts.create({ email: 'bob@example.com', name: null })
      const at = new Date(1_800_000_000_000)
      assert.equal(await store.twoStep.find(alice.id), undefined)
      assert.equal(await store.twoStep.useStep(alice.id, 5), false, 'nothing to accept a code for')
      assert.equal(await store.twoStep.startSetup(alice.id, 'sealed-1'), true)
      assert.equal(await store.twoStep.startSetup(alice.id, 'sealed-2'), true, 'a setup not confirmed is replaced')
      assert.deepEqual(await store.twoStep.find(alice.id), { accountId: alice.id, secretSealed: 'sealed-2', enabledAt: null, lastStep: 0 })
      assert.equal(await store.twoStep.useStep(alice.id, 5), false, 'a pending setup accepts no log-in code')
      assert.equal(await store.twoStep.enable(alice.id, 'sealed-1', 10, at, ['h1']), false, 'only the secret shown last is confirmed')
      assert.equal(await store.twoStep.enable(alice.id, 'sealed-2', 10, at, ['h1', 'h2', 'h3']), true)
      assert.equal(await store.twoStep.enable(alice.id, 'sealed-2', 11, at, ['h4']), false, 'on already')
      assert.equal(await store.twoStep.startSetup(alice.id, 'sealed-3'), false, 'no new setup while it is on')
      assert.deepEqual(await store.twoStep.find(alice.id), { accountId: alice.id, secretSealed: 'sealed-2', enabledAt: at, lastStep: 10 })

      assert.equal(await store.twoStep.useStep(alice.id, 10), false, 'the confirming step is used')
      const steps = await Promise.all(Array.from({ length: 8 }, async () => await store.twoStep.useStep(alice.id, 11)))
      assert.equal(steps.filter(Boolean).length, 1, 'one of many concurrent uses of a step succeeds')
      assert.equal(await store.twoStep.useStep(alice.id, 10), false, 'an earlier step after a later one')

      assert.deepEqual((await store.twoStep.unusedRecoveryCodes(alice.id)).sort(), ['h1', 'h2', 'h3'])
      const uses = await Promise.all(Array.from({ length: 8 }, async () => await store.twoStep.useRecoveryCode(alice.id, 'h2', at)))
      assert.equal(uses.filter(Boolean).length, 1, 'a recovery code is used once')
      assert.equal(await store.twoStep.useRecoveryCode(bob.id, 'h1', at), false, "another account's code")
      assert.deepEqual((await store.twoStep.unusedRecoveryCodes(alice.id)).sort(), ['h1', 'h3'])

      assert.equal(await store.twoStep.remove(bob.id), false)
      assert.equal(await store.twoStep.remove(alice.id), true)
      assert.equal(await store.twoStep.find(alice.id), undefined)
      assert.deepEqual(await store.twoStep.unusedRecoveryCodes(alice.id), [])
      assert.equal(await store.twoStep.startSetup(alice.id, 'sealed-4'), true, 'set up again after removal')
    })

    test('login attempts: counted per subject in fixed windows, atomically under concurrency, forgiven, cleared, purged', async (t) => {
      const store = await openStore(t)
      if (!store) return
      const t0 = new Date(1_800_000_000_000)
      const windowMs = 900_000
      const at = (ms: number): { now: Date, windowStart: Date } => ({ now: new Date(t0.getTime() + ms), windowStart: new Date(t0.getTime() + ms - windowMs) })
      const record = (subjects: string[], ms: number) => store.loginAttempts.record(subjects, at(ms).now, at(ms).windowStart)

      assert.deepEqual(await record(['account:a', 'address:x'], 0), [{ attempts: 1, windowStartedAt: t0 }, { attempts: 1, windowStartedAt: t0 }])
      assert.deepEqual(await record(['account:a', 'address:x'], 1000), [{ attempts: 2, windowStartedAt: t0 }, { attempts: 2, windowStartedAt: t0 }])
      assert.deepEqual(await record(['account:b', 'address:x'], 2000), [{ attempts: 1, windowStartedAt: at(2000).now }, { attempts: 3, windowStartedAt: t0 }])

      const concurrent = await Promise.all(Array.from({ length: 20 }, () => record(['account:c'], 3000)))
      assert.deepEqual(concurrent.map(([count]) => count?.attempts).sort((a, b) => (a ?? 0) - (b ?? 0)), Array.from({ length: 20 }, (_, i) => i + 1),
        'every concurrent attempt gets a count of its own')

      await store.loginAttempts.forgive('address:x')
      assert.equal((await record(['address:x'], 4000))[0]?.attempts, 3)
      await store.loginAttempts.clear('account:a')
      assert.deepEqual(await record(['account:a'], 5000), [{ attempts: 1, windowStartedAt: at(5000).now }])
      for (let i = 0; i < 5; i++) await store.loginAttempts.forgive('account:b')
      assert.equal((await record(['account:b'], 6000))[0]?.attempts, 1, 'forgiving never goes below zero')

      assert.deepEqual(await record(['address:x'], windowMs + 1), [{ attempts: 1, windowStartedAt: at(windowMs + 1).now }], 'a new window starts once the old one is over')
      assert.equal(await store.loginAttempts.deleteStaleBefore(new Date(t0.getTime() + 4000)), 2, 'account:b and account:c, whose windows began at 2000 and 3000')
      assert.deepEqual(await record(['account:c'], 7000), [{ attempts: 1, windowStartedAt: at(7000).now }])
    })

    test('a setting is created once and then shared', async (t) => {
      const store = await openStore(t)
      if (!store) return
      assert.equal(await store.setting('cursor_secret', () => 'first'), 'first')
      assert.equal(await store.setting('cursor_secret', () => 'second'), 'first')
    })
  })
}
