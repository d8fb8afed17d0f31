import { AsyncResource } from 'node:async_hooks'

/** Objects kept for as long as the process runs: what they hold alive is the point. */
const kept: object[] = []

/**
 * Keeps the hidden classes (V8 maps) of the objects `process.nextTick()` queues alive for as long
 * as the process runs, so that the code building them stays optimised. Without it a server process
 * can lose part of its throughput for good at a garbage collection (docs/performance.md, "Speed code").
 *
 * Node 20 builds each tick as the literal `{ [async_id_symbol]: id, [trigger_async_id_symbol]: id,
 * callback, args }`. For each key after the first computed one, V8 records the hidden class the key
 * was added to. Those classes are held weakly: a full garbage collection that runs while no tick is
 * queued (start-up's first, or a few while the process is quiet) lets them go, V8 makes new ones, finds a
 * class other than the one it recorded, and marks the three sites megamorphic for good. From then on
 * every tick (several per request: a stream's end, a write done, a resume) is built by the V8 runtime,
 * not by optimised code.
 *
 * One object of the same shape, kept here, holds the classes alive. Its ids are doubles, as Node's
 * are (it reads them from a Float64Array): integers would give the fields another representation,
 * and the ticks' own classes would replace this one's. The two symbols are the ones every
 * AsyncResource carries. On a Node.js that builds ticks otherwise this is one idle object.
 * Call it first, before the process has had time to collect anything.
 */
export function keepTickObjectShapes (): void {
  const symbols = Object.getOwnPropertySymbols(new AsyncResource('TickObjectShape'))
  const asyncId = symbols.find((symbol) => symbol.description === 'async_id_symbol')
  const triggerAsyncId = symbols.find((symbol) => symbol.description === 'trigger_async_id_symbol')
  if (asyncId === undefined || triggerAsyncId === undefined) return
  kept.push({ [asyncId]: 0.5, [triggerAsyncId]: 0.5, callback: keepTickObjectShapes, args: undefined })
}
