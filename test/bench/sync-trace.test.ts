import { test } from 'node:test'
import assert from 'node:assert/strict'
import { tracedSyncs } from '../../bench/sync-trace.js'

// Recorded from tracefs while the service group-committed creates: two syncs of the log (inode
// 2146487), the second with two writes in flight at once, and one sync of another file.
const TRACE = `# tracer: nop
            node-6270    [000] .....  1179.455567: ext4_sync_file_enter: dev 254,0 ino 2146487 parent 260072 datasync 1
            node-6270    [000] .....  1179.455641: block_rq_issue: 254,0 WS 32768 () 48027376 + 64 be,0,4 [node]
          <idle>-0       [001] ..s1.  1179.455832: block_rq_complete: 254,0 WS () 48027376 + 64 be,0,4 [0]
            node-6270    [000] .....  1179.456922: block_rq_issue: 254,0 WSM 4096 () 68681832 + 8 be,0,4 [node]
          <idle>-0       [001] ..s1.  1179.457004: block_rq_complete: 254,0 WSM () 68681832 + 8 be,0,4 [0]
    kworker/0:0H-10      [000] .....  1179.457036: block_rq_issue: 254,0 FF 0 () 0 + 0 none,0,0 [kworker/0:0H]
          <idle>-0       [001] ..s1.  1179.457083: block_rq_complete: 254,0 FF () 18446744073709551615 + 0 none,0,0 [0]
          <idle>-0       [001] d.s2.  1179.457085: block_rq_complete: 254,0 WS () 0 + 0 be,0,4 [0]
            node-6270    [000] .....  1179.457102: ext4_sync_file_exit: dev 254,0 ino 2146487 ret 0
            node-6270    [000] .....  1179.600000: ext4_sync_file_enter: dev 254,0 ino 999 parent 260072 datasync 1
            node-6270    [000] .....  1179.600100: block_rq_issue: 254,0 WS 4096 () 123 + 8 be,0,4 [node]
          <idle>-0       [001] ..s1.  1179.600200: block_rq_complete: 254,0 WS () 123 + 8 be,0,4 [0]
            node-6270    [000] .....  1179.600300: ext4_sync_file_exit: dev 254,0 ino 999 ret 0
            node-6270    [000] .....  1179.671047: ext4_sync_file_enter: dev 254,0 ino 2146487 parent 260072 datasync 1
            node-6270    [000] .....  1179.671095: block_rq_issue: 254,0 WS 24576 () 516697880 + 48 be,0,4 [node]
            node-6270    [000] .....  1179.671098: block_rq_issue: 254,0 WS 8192 () 47983232 + 16 be,0,4 [node]
          <idle>-0       [001] ..s1.  1179.671247: block_rq_complete: 254,0 WS () 516697880 + 48 be,0,4 [0]
          <idle>-0       [001] ..s1.  1179.671264: block_rq_complete: 254,0 WS () 47983232 + 16 be,0,4 [0]
    kworker/0:0H-10      [000] .....  1179.678334: block_rq_issue: 254,0 FF 0 () 0 + 0 none,0,0 [kworker/0:0H]
          <idle>-0       [001] ..s1.  1179.678437: block_rq_complete: 254,0 FF () 18446744073709551615 + 0 none,0,0 [0]
          <idle>-0       [001] d.s2.  1179.678439: block_rq_complete: 254,0 WS () 0 + 0 be,0,4 [0]
            node-6270    [000] .....  1179.679851: ext4_sync_file_exit: dev 254,0 ino 2146487 ret 0
`

const rounded = (value: number): number => Math.round(value)

test('each sync of the file is found with the requests it sent, in µs from its start', () => {
  const syncs = tracedSyncs(TRACE, 2146487)
  assert.equal(syncs.length, 2)
  const [first, second] = syncs
  assert.equal(rounded(first?.durationUs ?? 0), 1535)
  assert.deepEqual(first?.steps.map((step) => [step.kind, rounded(step.sentUs), rounded(step.doneUs)]), [
    ['data', 74, 265],
    ['metadata', 1355, 1437],
    ['flush', 1469, 1516]
  ])
  assert.deepEqual(second?.steps.map((step) => [step.kind, rounded(step.sentUs), rounded(step.doneUs)]), [
    ['data', 48, 200],
    ['data', 51, 217],
    ['flush', 7287, 7390]
  ])
})

test('syncs of other files are left out', () => {
  assert.deepEqual(tracedSyncs(TRACE, 999).map((sync) => sync.steps.map((step) => step.kind)), [['data']])
  assert.deepEqual(tracedSyncs(TRACE, 42), [])
})
