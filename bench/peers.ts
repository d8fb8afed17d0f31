/**
 * The peer a user would otherwise pick: json-server 0.17, installed on first use into
 * bench/.peers (not a dependency of the service), serving the same demo animals.
 */
import { execFileSync } from 'node:child_process'
import { existsSync, writeFileSync } from 'node:fs'
import { join } from 'node:path'
import { demoPets } from '../src/core/demo-pets.js'
import { root } from './support.js'

const PEERS = join(root, 'bench', '.peers')
const JSON_SERVER_VERSION = '0.17.4'

/** The path of json-server's command-line entry point. */
export async function installJsonServer (): Promise<string> {
  const bin = join(PEERS, 'node_modules', 'json-server', 'lib', 'cli', 'bin.js')
  if (!existsSync(bin)) {
    console.log(`Installing json-server ${JSON_SERVER_VERSION} into bench/.peers …`)
    execFileSync('npm', ['install', '--prefix', PEERS, '--no-save', '--no-audit', '--no-fund', '--loglevel=error', `json-server@${JSON_SERVER_VERSION}`], { stdio: 'inherit' })
  }
  return bin
}

/** Writes json-server's database file with the same animals `animal-store seed` makes, and returns its path. */
export function jsonServerDatabase (path: string, count: number): string {
  const pets = []
  let id = 0
  for (const pet of demoPets(count)) pets.push({ id: ++id, name: pet.name, categoryId: Number(pet.categoryId), status: pet.status })
  writeFileSync(path, JSON.stringify({ pets }))
  return path
}
