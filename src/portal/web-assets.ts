import { createHash } from 'node:crypto'
import { readFileSync } from 'node:fs'
import { join } from 'node:path'
import type { AssetUrls } from './views/layout.js'

interface Asset { body: Buffer, type: string, path: string }

/** The web pages' static files: beside this module when run from source, beside the bundle once built (scripts/build.mjs). */
export const WEB_ASSETS_DIR = join(import.meta.dirname, 'assets')

type Assets = { files: Record<keyof AssetUrls, Asset>, urls: AssetUrls }
let loaded: Assets | undefined

/** The stylesheet, the copy-button script and the icon, read once; their URLs carry a digest of the content. */
export function loadAssets (): Assets {
  if (loaded !== undefined) return loaded
  const read = (name: string, type: string): Asset => ({ path: `/assets/${name}`, body: readFileSync(join(WEB_ASSETS_DIR, name)), type })
  const files = {
    css: read('portal.css', 'text/css; charset=utf-8'),
    script: read('copy.js', 'text/javascript; charset=utf-8'),
    icon: read('favicon.svg', 'image/svg+xml')
  }
  const url = ({ path, body }: Asset): string => `/portal${path}?v=${createHash('sha256').update(body).digest('base64url').slice(0, 12)}`
  loaded = { files, urls: { css: url(files.css), script: url(files.script), icon: url(files.icon) } }
  return loaded
}
