import { test } from 'node:test'
import { buildTestApp } from './helpers/build-app.js'
test('probe', async (t) => {
  const { app, auth } = await buildTestApp(t)
  for (let i = 0; i < 5; i++) await app.inject({ method: 'POST', url: '/v1/pets', headers: { ...auth, 'content-type': 'application/json' }, payload: '{"name":"a","categoryId":1}' })
  const r = await app.inject({ method: 'GET', url: '/v1/pets?limit=2', headers: auth })
  const link = String(r.headers.link)
  const cursor = /cursor=([^>&]+)/.exec(link)![1]!
  console.log(link, cursor)
  const [p, m] = cursor.split('.') as [string, string]
  const variants: Record<string, string> = {
    same: cursor,
    lastCharMac: p + '.' + m.slice(0, -1) + (m.endsWith('A') ? 'B' : 'A'),
    lastCharMac2: p + '.' + m.slice(0, -1) + String.fromCharCode(m.charCodeAt(m.length - 1) ^ 1),
    appendJunk: cursor + '!',
    appendEq: cursor + '=',
    appendEqEnc: cursor + '%3D%3D',
    plusSlash: cursor.replace(/-/g, '+').replace(/_/g, '/'),
    lastCharPayload: p.slice(0, -1) + String.fromCharCode(p.charCodeAt(p.length - 1) ^ 1) + '.' + m,
    spaceInside: p + '.%20' + m,
    trailingSpace: cursor + '%20',
    uppercase: cursor.toUpperCase(),
    leadingDot: '.' + cursor
  }
  for (const [name, c] of Object.entries(variants)) {
    const x = await app.inject({ method: 'GET', url: `/v1/pets?limit=2&cursor=${c}`, headers: auth })
    console.log(name, c, x.statusCode, x.body.slice(0, 100))
  }
})
