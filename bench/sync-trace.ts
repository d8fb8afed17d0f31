/**
 * What one fdatasync does on the disk, read from the kernel's own trace (tracefs): the ext4
 * sync of a file and the block requests sent while it ran. Needs Linux, root and an ext4
 * file; bench/sync-anatomy.ts uses it.
 */
import { existsSync, readFileSync, writeFileSync } from 'node:fs'
import { execFileSync } from 'node:child_process'

const TRACING = '/sys/kernel/tracing'
const EVENTS = ['ext4/ext4_sync_file_enter', 'ext4/ext4_sync_file_exit', 'block/block_rq_issue', 'block/block_rq_complete']

/** Why tracing cannot run here, or undefined when it can (mounting tracefs if it is not). */
export function tracingUnavailable (): string | undefined {
  if (process.platform !== 'linux') return 'the kernel trace needs Linux'
  if (process.getuid?.() !== 0) return 'the kernel trace needs root'
  if (!existsSync(`${TRACING}/trace`)) {
    try {
      execFileSync('mount', ['-t', 'tracefs', 'nodev', TRACING], { stdio: 'ignore' })
    } catch {
      return `tracefs is not mounted at ${TRACING} and could not be`
    }
  }
  return EVENTS.every((event) => existsSync(`${TRACING}/events/${event}/enable`)) ? undefined : `the kernel offers no ${EVENTS.join(', ')} events`
}

const write = (file: string, value: string): void => writeFileSync(`${TRACING}/${file}`, value)

/** Starts recording the events into an empty buffer. */
export function startTrace (): void {
  write('tracing_on', '0')
  write('trace', '')
  write('buffer_size_kb', '65536')
  for (const event of EVENTS) write(`events/${event}/enable`, '1')
  write('tracing_on', '1')
}

/** Stops recording and returns what was recorded. */
export function stopTrace (): string {
  write('tracing_on', '0')
  const text = readFileSync(`${TRACING}/trace`, 'utf8')
  for (const event of EVENTS) write(`events/${event}/enable`, '0')
  write('trace', '')
  return text
}

/** What a block request carried: the file's pages, filesystem metadata (an inode block, say), or a flush of the disk's cache. */
export type RequestKind = 'data' | 'metadata' | 'flush'

export interface SyncStep { kind: RequestKind, sentUs: number, doneUs: number }

/** One fdatasync: when it began and ended, and each block request sent while it ran, in order, in µs from its start. */
export interface TracedSync { startedUs: number, durationUs: number, steps: SyncStep[] }

const LINE = /^\s*(.+?)-(\d+)\s+\[\d+\]\s+\S+\s+([\d.]+): (\w+): (.*)$/

/** The request's kind from its rwbs flags ("WS", "WSM", "FF" …). */
function kindOf (rwbs: string): RequestKind {
  if (rwbs.startsWith('F')) return 'flush'
  return rwbs.includes('M') ? 'metadata' : 'data'
}

/**
 * The syncs of the file with inode `inode` and the requests sent during each. A request's
 * completion is matched to its issue by sector (flushes have none, and complete in order).
 * The completion the kernel reports for the empty write that carried a flush is left out.
 * Requests of a sync that overlapped another sync of the same device are still counted: the
 * caller syncs one file at a time.
 */
export function tracedSyncs (trace: string, inode: number): TracedSync[] {
  const syncs: TracedSync[] = []
  let current: (TracedSync & { thread: string, pending: Map<string, SyncStep> }) | undefined
  for (const line of trace.split('\n')) {
    const match = LINE.exec(line)
    if (match === null) continue
    const [, , thread = '', seconds = '0', event, detail = ''] = match
    const atUs = Number(seconds) * 1e6
    if (event === 'ext4_sync_file_enter' && new RegExp(`\\bino ${inode}\\b`).test(detail)) {
      current = { startedUs: atUs, durationUs: 0, steps: [], thread, pending: new Map() }
    } else if (event === 'ext4_sync_file_exit' && current !== undefined && thread === current.thread && new RegExp(`\\bino ${inode}\\b`).test(detail)) {
      syncs.push({ startedUs: current.startedUs, durationUs: atUs - current.startedUs, steps: current.steps.filter((step) => step.doneUs >= step.sentUs) })
      current = undefined
    } else if (current !== undefined && (event === 'block_rq_issue' || event === 'block_rq_complete')) {
      // "254,0 WS 32768 () 48027376 + 64 ..." on issue; "254,0 WS () 48027376 + 64 ..." on completion.
      const fields = detail.split(/\s+/)
      const rwbs = fields[1] ?? ''
      const sector = event === 'block_rq_issue' ? fields[4] : fields[3]
      const kind = kindOf(rwbs)
      const key = kind === 'flush' ? 'flush' : `${sector ?? ''}`
      if (event === 'block_rq_issue') {
        const step = { kind, sentUs: atUs - current.startedUs, doneUs: -1 }
        current.steps.push(step)
        current.pending.set(key, step)
      } else {
        const step = current.pending.get(key)
        if (step !== undefined) {
          step.doneUs = atUs - current.startedUs
          current.pending.delete(key)
        }
      }
    }
  }
  return syncs
}
