import assert from 'node:assert/strict'
import type { TestContext } from 'node:test'
import { launchServer, type ServerHandle } from './server-process.js'

export interface NewPet { name: string, categoryId: number, status?: 'available' | 'pending' | 'sold' }
export interface Pet extends NewPet { id: number }

export interface CrashTrialFigures {
  trial: number
  /** The number of acknowledgements after which the server was SIGKILLed. */
  killAfter: number
  /** Creates answered 201 in this trial, including answers that were already on their way when the kill was sent. */
  acknowledged: number
  /** Creates sent in this trial. */
  sent: number
  /** Creates sent but never answered: cut by the kill. */
  cut: number
  /** From the start of the server to the end of the check after its successor started. */
  ms: number
}

export interface CrashFigures {
  trials: CrashTrialFigures[]
  acknowledged: number
  sent: number
  cut: number
  ms: number
  /** Every animal acknowledged over all the trials, as the 201 bodies carried them. */
  pets: Pet[]
}

export interface CrashTrialOptions {
  /** The `serve` environment: DATABASE_URL and the rest. LOG_LEVEL must let the "listening" line through. */
  env: Record<string, string>
  /** A valid API key on that database. */
  key: string
  trials: number
  clients: number
  /** Prefixes the diagnostics, e.g. the engine. */
  label: string
  /** Pins every server of the trials to these CPUs (a `taskset -c` list). */
  cores?: string
  /** Runs after each kill, before the next start: the database as the crash left it. */
  afterKill?: (trial: number) => Promise<void> | void
}

const STATUSES = ['available', 'pending', 'sold', undefined] as const
const MIN_KILL_AFTER = 20
const MAX_KILL_AFTER = 200
const CHECKERS = 16

export function newPet (label: string): NewPet {
  const status = STATUSES[Math.floor(Math.random() * STATUSES.length)]
  return {
    name: `${label} ✓ Fëlix 🐈 "quoted"`,
    categoryId: Math.floor(Math.random() * 1e12) - 5e11,
    ...(status !== undefined && { status })
  }
}

/** Asserts that every acknowledged animal is served by GET /v1/pets/{id} with identical content. */
export async function assertAllPresent (baseUrl: string, key: string, acknowledged: Pet[], context: string): Promise<void> {
  const queue = [...acknowledged]
  const missing: string[] = []
  await Promise.all(Array.from({ length: CHECKERS }, async () => {
    for (let pet = queue.shift(); pet !== undefined; pet = queue.shift()) {
      const response = await fetch(`${baseUrl}/v1/pets/${pet.id}`, { headers: { authorization: `Bearer ${key}` } })
      const text = await response.text()
      if (response.status !== 200) {
        missing.push(`#${pet.id}: ${response.status} ${text}`)
        continue
      }
      try {
        assert.deepEqual(JSON.parse(text), pet)
      } catch {
        missing.push(`#${pet.id}: expected ${JSON.stringify(pet)}, got ${text}`)
      }
    }
  }))
  assert.deepEqual(missing, [], `${context}: ${missing.length} of ${acknowledged.length} acknowledged animals are missing or changed`)
}

/**
 * Crash trials: in each, `clients` concurrent clients create animals until the server
 * has acknowledged a random number (20 to 200) of them, then the server is SIGKILLed
 * with creates in flight, restarted, and every animal acknowledged so far (in this trial
 * and the earlier ones) must be served with exactly the content of its 201 body.
 * Leaves the last server running; returns it with the figures.
 */
export async function runCrashTrials (t: TestContext, options: CrashTrialOptions): Promise<{ figures: CrashFigures, server: ServerHandle }> {
  const { env, key, trials, clients, label, cores } = options
  const acknowledged: Pet[] = []
  const ids = new Set<number>()
  const figures: CrashTrialFigures[] = []
  const startedAt = performance.now()

  let server = launchServer(t, env, { cores })
  let baseUrl = await server.listening
  let trialStartedAt = startedAt
  for (let trial = 1; trial <= trials; trial++) {
    const killAfter = MIN_KILL_AFTER + Math.floor(Math.random() * (MAX_KILL_AFTER - MIN_KILL_AFTER + 1))
    const context = `${label} trial ${trial}/${trials}, SIGKILL after ${killAfter} acknowledgements`
    const victim = server
    const acks: Pet[] = []
    const unexpected: string[] = []
    let killed = false
    let stopped = false
    let sent = 0
    let answered = 0

    const post = async (pet: NewPet): Promise<{ status: number, body: string }> => {
      sent++
      const response = await fetch(`${baseUrl}/v1/pets`, {
        method: 'POST',
        headers: { authorization: `Bearer ${key}`, 'content-type': 'application/json' },
        body: JSON.stringify(pet)
      })
      return { status: response.status, body: await response.text() }
    }
    const fail = (problem: string): void => {
      unexpected.push(problem)
      // Stop sending: with the server answering errors, the kill point would never come.
      stopped = true
    }

    // Each client sends its next create before it counts the answer to the previous
    // one, so the kill usually lands while creates are on their way or committing.
    await Promise.all(Array.from({ length: clients }, async (_, client) => {
      let pet = newPet(`${label} trial ${trial} client ${client} #0`)
      let pending: Promise<{ status: number, body: string }> | undefined = post(pet)
      for (let n = 1; pending !== undefined; n++) {
        let result: { status: number, body: string }
        try {
          result = await pending
        } catch (error) {
          // Cut by the kill: not acknowledged, so nothing is promised about it.
          if (!killed) fail(`request failed before the kill: ${pet.name}: ${String((error as Error).cause ?? error)}`)
          return
        }
        answered++
        const sentPet = pet
        pending = undefined
        if (!killed && !stopped) {
          pet = newPet(`${label} trial ${trial} client ${client} #${n}`)
          pending = post(pet)
        }
        if (result.status !== 201) {
          fail(`${result.status} ${result.body}`)
          continue
        }
        let created: Pet
        try {
          created = JSON.parse(result.body) as Pet
        } catch {
          fail(`201 with a body that is not JSON: ${result.body}`)
          continue
        }
        if (!Number.isSafeInteger(created.id) || created.id < 1) fail(`bad id in ${result.body}`)
        try {
          assert.deepEqual(created, { id: created.id, ...sentPet })
        } catch {
          fail(`201 body ${result.body} does not echo ${JSON.stringify(sentPet)}`)
        }
        if (ids.has(created.id)) fail(`id ${created.id} acknowledged twice: ${result.body}`)
        ids.add(created.id)
        acks.push(created)
        if (acks.length >= killAfter && !killed) {
          killed = true
          victim.child.kill('SIGKILL')
        }
      }
    }))
    if (!killed) victim.child.kill('SIGKILL')
    assert.deepEqual(unexpected, [], context)
    assert.ok(killed, context)
    assert.deepEqual(await victim.exited, { code: null, signal: 'SIGKILL' }, context)
    assert.ok(acks.length >= killAfter, context)
    acknowledged.push(...acks)
    await options.afterKill?.(trial)

    server = launchServer(t, env, { cores })
    baseUrl = await server.listening
    await assertAllPresent(baseUrl, key, acknowledged, context)

    const now = performance.now()
    const figure = { trial, killAfter, acknowledged: acks.length, sent, cut: sent - answered, ms: Math.round(now - trialStartedAt) }
    trialStartedAt = now
    figures.push(figure)
    t.diagnostic(`${label} trial ${trial}/${trials}: SIGKILL after ${killAfter} acknowledgements; ${figure.acknowledged} acknowledged, ` +
      `${figure.sent} sent, ${figure.cut} cut by the kill; all ${acknowledged.length} acknowledged so far present after restart (${figure.ms} ms)`)
  }

  const sum = (field: 'acknowledged' | 'sent' | 'cut'): number => figures.reduce((total, figure) => total + figure[field], 0)
  return {
    figures: {
      trials: figures,
      acknowledged: sum('acknowledged'),
      sent: sum('sent'),
      cut: sum('cut'),
      ms: Math.round(performance.now() - startedAt),
      pets: acknowledged
    },
    server
  }
}
