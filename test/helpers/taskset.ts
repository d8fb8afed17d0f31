import { execFileSync } from 'node:child_process'

/** Whether `taskset` (util-linux) can pin processes here: tests that pin a server skip without it. */
export const canPin = ((): boolean => {
  try {
    execFileSync('taskset', ['-p', String(process.pid)], { stdio: 'ignore' })
    return true
  } catch {
    return false
  }
})()
