import { test } from 'node:test'
import { buildTestApp } from './helpers/build-app.js'
test('probe', async (t) => {
  const { app, auth } = await buildTestApp(t)
  const long = '1'.repeat(101)
  for (const url of ['/v1/%ZZ', '/v1/pets%ZZ', '/v1/store/orders%ZZ', '/v1/store/orders/%ZZ', '/nope/%ZZ', '/%ZZ', '/v1/store/orders?x=%ZZ', '/v1/pets/%ZZ', '/v1/pets/' + long, '/v1/store/orders/' + long, '/v1/' + 'a'.repeat(300), '/v1/pets/1%20', '/v1/openapi.json%ZZ', '/v1/pets/%C0%AF', '/v1/pets/%ED%A0%80', '/v1/pets/%EF%BF%BF', '/v1/pets/%', '/v1/pets/%2', '/v1/pets/1%', '/v1/pets?limit=1%', '/v1/pets?status=%E9', '/v1/pets/9223372036854775807', '/v1/pets/9223372036854775808', '/v1/pets/00', '/v1/pets/+1', '/v1/pets/1e3', '/v1/pets/0x10', '/v1/pets/１', '/v1/pets/%EF%BC%91']) {
    for (const method of ['GET', 'POST', 'PUT', 'DELETE', 'HEAD', 'OPTIONS', 'PATCH']) {
      try {
        const r = await app.inject({ method: method as 'GET', url, headers: { ...auth, 'content-type': 'application/json' }, payload: method === 'GET' || method === 'HEAD' ? undefined : '{}' })
        console.log(method, JSON.stringify(url).slice(0, 50), r.statusCode, String(r.headers['content-type']), r.headers.allow ?? '', r.body.slice(0, 120))
      } catch (e) { console.log('url', JSON.stringify(url), 'THREW', e) }
    }
  }
  for (const method of ['TRACE', 'CONNECT', 'PROPFIND', 'SEARCH', 'QUERY', 'LINK', 'MKCOL', 'COPY', 'FOO']) {
    try {
      const r = await app.inject({ method: method as 'GET', url: '/v1/pets', headers: auth })
      console.log(method, r.statusCode, String(r.headers['content-type']), r.headers.allow ?? '', r.body.slice(0, 120))
      const r2 = await app.inject({ method: method as 'GET', url: '/v1/pets' })
      console.log(method, 'noauth', r2.statusCode, r2.body.slice(0, 120))
    } catch (e) { console.log(method, 'THREW', String(e)) }
  }
})
