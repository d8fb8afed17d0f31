import { parseArgs } from 'node:util'
import { demoPets } from '../../core/demo-pets.js'
import type { NewPetRecord } from '../../core/pets.js'
import { CliError, type CliContext, type Command } from '../context.js'
import { withStore } from '../with-store.js'

const BATCH = 10_000
const MAX_COUNT = 100_000_000

function reporter (context: CliContext, total: number): (done: number) => void {
  const started = Date.now()
  let lastTenth = -1
  return (done) => {
    const seconds = (Date.now() - started) / 1000
    const rate = seconds > 0 ? Math.round(done / seconds) : 0
    if (context.progress?.isTerminal === true) {
      const width = 30
      const filled = Math.round(width * done / total)
      context.progress.redraw(`[${'#'.repeat(filled)}${' '.repeat(width - filled)}] ${Math.floor(100 * done / total)}%  ${done.toLocaleString('en')}/${total.toLocaleString('en')}  ${rate.toLocaleString('en')}/s`)
      if (done === total) context.progress.redraw('')
      return
    }
    // Not a terminal (a log, CI): a plain line at every tenth.
    const tenth = Math.floor(10 * done / total)
    if (tenth !== lastTenth) {
      lastTenth = tenth
      context.stderr(`seeded ${done}/${total} (${Math.floor(100 * done / total)}%), ${rate}/s`)
    }
  }
}

export const seed: Command = {
  usage: 'animal-store seed --count N [--seed S]',
  summary: 'Load N realistic demo animals (names, categories, statuses) in batches; the same --seed gives the same animals.',
  run: async (args, context) => {
    const { values } = parseArgs({ args, options: { count: { type: 'string' }, seed: { type: 'string' } }, strict: true })
    const count = Number(values.count)
    if (values.count === undefined || !/^[0-9]+$/.test(values.count) || count < 1 || count > MAX_COUNT) {
      throw new CliError(`--count must be an integer from 1 to ${MAX_COUNT}`)
    }
    const seedValue = values.seed === undefined ? 1 : Number(values.seed)
    if (!Number.isSafeInteger(seedValue)) throw new CliError('--seed must be an integer')
    const started = Date.now()
    await withStore(context, async (store) => {
      const report = reporter(context, count)
      let batch: NewPetRecord[] = []
      let done = 0
      report(0)
      for (const pet of demoPets(count, seedValue)) {
        batch.push(pet)
        if (batch.length === BATCH) {
          await store.pets.insertMany(batch)
          done += batch.length
          batch = []
          report(done)
        }
      }
      if (batch.length > 0) {
        await store.pets.insertMany(batch)
        done += batch.length
        report(done)
      }
    })
    context.stdout(`Seeded ${count} animals in ${((Date.now() - started) / 1000).toFixed(1)} s.`)
    return 0
  }
}
