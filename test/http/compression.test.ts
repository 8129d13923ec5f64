import { afterAll, beforeAll, describe, expect, test } from 'bun:test'
import { join } from 'node:path'
import { brotliDecompressSync } from 'node:zlib'
import { version as SWAGGER_UI_VERSION } from 'swagger-ui-dist/package.json'
import { negotiateEncoding } from '../../src/http/compression'
import { swaggerUiFile } from '../../src/http/openapi'
import { makeImage, uploadForm } from '../fixtures'
import { startTestServer, type TestServer, userWithKey } from '../helpers'

const ROOT = join(import.meta.dir, '../..')
const BUNDLE = join(ROOT, 'node_modules/swagger-ui-dist/swagger-ui-bundle.js')

let t: TestServer
beforeAll(async () => {
  t = await startTestServer()
})
afterAll(() => t.stop())

/** A request as a browser makes it, the body left as sent (fetch would otherwise decode it). */
async function raw(path: string, headers: Record<string, string> = {}) {
  const res = await fetch(t.url + path, { headers, decompress: false } as RequestInit)
  return { res, bytes: new Uint8Array(await res.arrayBuffer()) }
}

const decode = (bytes: Uint8Array, encoding: string | null) =>
  encoding === 'br'
    ? new Uint8Array(brotliDecompressSync(bytes))
    : encoding === 'gzip'
      ? Bun.gunzipSync(bytes as Uint8Array<ArrayBuffer>)
      : bytes

describe('Accept-Encoding negotiation', () => {
  test('brotli first, then gzip; q=0 refuses a coding, * allows any, nothing or identity: none', () => {
    expect(negotiateEncoding('gzip, deflate, br, zstd')).toBe('br')
    expect(negotiateEncoding('gzip')).toBe('gzip')
    expect(negotiateEncoding('br;q=0, gzip;q=0.5')).toBe('gzip')
    expect(negotiateEncoding('BR; Q=0, GZIP')).toBe('gzip')
    expect(negotiateEncoding('*')).toBe('br')
    expect(negotiateEncoding('*;q=0, gzip')).toBe('gzip')
    expect(negotiateEncoding('identity')).toBeNull()
    expect(negotiateEncoding('gzip;q=0')).toBeNull()
    expect(negotiateEncoding('')).toBeNull()
    expect(negotiateEncoding(null)).toBeNull()
  })
})

describe('the Swagger UI bundle', () => {
  test('the page loads both files by versioned URLs; those are kept for good, the bare ones revalidated', async () => {
    const page = await (await t.fetch('/swagger')).text()
    for (const file of ['swagger-ui-bundle.js', 'swagger-ui.css']) {
      const url = `/swagger/assets/${file}?v=${SWAGGER_UI_VERSION}`
      expect(page).toContain(url)
      const versioned = await raw(url, { 'accept-encoding': 'gzip, br' })
      expect(versioned.res.headers.get('cache-control')).toBe('public, max-age=31536000, immutable')
      const bare = await raw(`/swagger/assets/${file}`, { 'accept-encoding': 'gzip, br' })
      expect(bare.res.headers.get('cache-control')).toBe('no-cache')
      expect(bare.res.headers.get('etag')).toBe(versioned.res.headers.get('etag'))
    }
  })

  test('brotli or gzip as the client takes them, each decoding to the installed file; none when none is taken', async () => {
    const original = await Bun.file(BUNDLE).bytes()
    const url = `/swagger/assets/swagger-ui-bundle.js?v=${SWAGGER_UI_VERSION}`
    const tags = new Set<string>()
    for (const [accept, coding] of [
      ['gzip, deflate, br', 'br'],
      ['gzip', 'gzip'],
      ['br;q=0, gzip', 'gzip'],
      ['identity', null],
    ] as const) {
      const { res, bytes } = await raw(url, { 'accept-encoding': accept })
      expect({ accept, status: res.status, coding: res.headers.get('content-encoding') }).toEqual({
        accept,
        status: 200,
        coding,
      })
      expect(res.headers.get('vary')).toBe('accept-encoding')
      expect(res.headers.get('content-type')).toContain('javascript')
      expect(Number(res.headers.get('content-length'))).toBe(bytes.byteLength)
      if (coding) expect(bytes.byteLength).toBeLessThan(original.byteLength / 3)
      expect(Bun.hash(decode(bytes, coding))).toBe(Bun.hash(original))
      tags.add(res.headers.get('etag')!)
    }
    // One tag per coding (identity, gzip, br): a cache never answers one coding's bytes for another.
    expect(tags.size).toBe(3)
  })

  test('a client holding the file gets a 304 with no body', async () => {
    const url = `/swagger/assets/swagger-ui.css?v=${SWAGGER_UI_VERSION}`
    const first = await raw(url, { 'accept-encoding': 'br' })
    const again = await raw(url, { 'accept-encoding': 'br', 'if-none-match': first.res.headers.get('etag')! })
    expect(again.res.status).toBe(304)
    expect(again.bytes.byteLength).toBe(0)
    expect(again.res.headers.get('etag')).toBe(first.res.headers.get('etag'))
    // Another coding is another representation: a full answer.
    const gzip = await raw(url, { 'accept-encoding': 'gzip', 'if-none-match': first.res.headers.get('etag')! })
    expect(gzip.res.status).toBe(200)
  })

  test('coded once and kept: every request answers from the same coded file', async () => {
    const first = swaggerUiFile('swagger-ui-bundle.js')
    expect(first).toBeDefined()
    expect(swaggerUiFile('swagger-ui-bundle.js')).toBe(first!)
    const file = await first!
    expect(file.coded('br')).toBe(file.coded('br'))
    expect(swaggerUiFile('../package.json')).toBeUndefined()
    expect((await t.fetch('/swagger/assets/index.html')).status).toBe(404)
  })
})

describe('HTML pages', () => {
  test('compressed as negotiated, with Vary, no-cache and an ETag; a 304 while the page is unchanged', async () => {
    for (const path of ['/', '/gallery', '/login', '/swagger']) {
      const plain = await raw(path)
      expect(plain.res.headers.get('content-type')).toContain('text/html')
      expect(plain.res.headers.get('content-encoding')).toBeNull()
      const html = new TextDecoder().decode(plain.bytes)
      for (const [accept, coding] of [
        ['gzip, deflate, br', 'br'],
        ['gzip', 'gzip'],
      ] as const) {
        const { res, bytes } = await raw(path, { 'accept-encoding': accept })
        expect({ path, coding: res.headers.get('content-encoding') }).toEqual({ path, coding })
        expect(res.headers.get('vary')).toBe('accept-encoding')
        expect(res.headers.get('cache-control')).toBe('no-cache')
        expect(res.headers.get('content-security-policy')).toBe(plain.res.headers.get('content-security-policy'))
        expect(new TextDecoder().decode(decode(bytes, coding))).toBe(html)
        const again = await raw(path, { 'accept-encoding': accept, 'if-none-match': res.headers.get('etag')! })
        expect({ path, status: again.res.status }).toEqual({ path, status: 304 })
      }
    }
  })

  test('a changed page has another ETag: the held one gets the new page', async () => {
    const owner = await userWithKey(t)
    const up = await t.json('/api/v1/upload', {
      method: 'POST',
      headers: owner.keyHeader,
      body: uploadForm([{ bytes: await makeImage('png', 16, 16, 3) }], { visibility: 'public' }),
    })
    expect(up.status).toBe(201)
    const first = await raw(`/i/${up.body.id}`, { 'accept-encoding': 'gzip' })
    const etag = first.res.headers.get('etag')!
    const renamed = await t.json(`/api/v1/image/${up.body.id}`, {
      method: 'PATCH',
      headers: { ...owner.keyHeader, 'content-type': 'application/json' },
      body: JSON.stringify({ nsfw: true }),
    })
    expect(renamed.status).toBe(200)
    const again = await raw(`/i/${up.body.id}`, { 'accept-encoding': 'gzip', 'if-none-match': etag })
    expect(again.res.status).toBe(200)
    expect(again.res.headers.get('etag')).not.toBe(etag)
  })
})

describe('/cdn', () => {
  test('image files are never compressed, whatever the client accepts', async () => {
    const owner = await userWithKey(t)
    const up = await t.json('/api/v1/upload', {
      method: 'POST',
      headers: owner.keyHeader,
      body: uploadForm([{ bytes: await makeImage('png', 32, 32, 5) }, { bytes: await makeImage('gif', 32, 32, 6) }]),
    })
    expect(up.status).toBe(201)
    for (const image of up.body.images) {
      for (const link of [image.url, image.thumbnail]) {
        const { res } = await raw(new URL(link).pathname, { 'accept-encoding': 'gzip, deflate, br' })
        expect({ link, status: res.status, coding: res.headers.get('content-encoding') }).toEqual({
          link,
          status: 200,
          coding: null,
        })
      }
    }
  })
})
