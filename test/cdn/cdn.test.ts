import { afterAll, beforeAll, describe, expect, test } from 'bun:test'
import sharp from 'sharp'
import { type Bytes, makeAnimatedGif, makeImage, svgImage, uploadForm } from '../fixtures'
import { startTestServer, type TestServer, userWithKey } from '../helpers'

let t: TestServer
let jpeg: { id: string; url: string; thumbnail: string; size: number }
let jpegBytes: Bytes
let owner: Awaited<ReturnType<typeof userWithKey>>

beforeAll(async () => {
  t = await startTestServer()
  owner = await userWithKey(t)
  jpegBytes = await makeImage('jpeg', 1200, 800)
  jpeg = (
    await t.json('/api/v1/upload', {
      method: 'POST',
      headers: owner.keyHeader,
      body: uploadForm([{ bytes: jpegBytes, name: 'big.jpg' }]),
    })
  ).body
})
afterAll(() => t.stop())

const path = (url: string) => new URL(url).pathname

describe('/cdn/<id>.<ext>', () => {
  test('serves the original bytes with the contract headers', async () => {
    const res = await t.fetch(path(jpeg.url))
    expect(res.status).toBe(200)
    expect(res.headers.get('content-type')).toBe('image/jpeg')
    expect(res.headers.get('cache-control')).toBe('public, max-age=31536000, immutable')
    expect(res.headers.get('x-content-type-options')).toBe('nosniff')
    expect(res.headers.get('etag')).toBeTruthy()
    expect(res.headers.get('accept-ranges')).toBe('bytes')
    expect(Number(res.headers.get('content-length'))).toBe(jpegBytes.length)
    expect(new Uint8Array(await res.arrayBuffer())).toEqual(jpegBytes)
  })
  test('If-None-Match answers 304 without a body', async () => {
    const etag = (await t.fetch(path(jpeg.url))).headers.get('etag')!
    const res = await t.fetch(path(jpeg.url), { headers: { 'if-none-match': etag } })
    expect(res.status).toBe(304)
    expect((await res.arrayBuffer()).byteLength).toBe(0)
    expect((await t.fetch(path(jpeg.url), { headers: { 'if-none-match': '"other"' } })).status).toBe(200)
  })
  test('HEAD answers the headers only', async () => {
    const res = await t.fetch(path(jpeg.url), { method: 'HEAD' })
    expect(res.status).toBe(200)
    expect(res.headers.get('content-type')).toBe('image/jpeg')
    expect(Number(res.headers.get('content-length'))).toBe(jpegBytes.length)
    expect((await res.arrayBuffer()).byteLength).toBe(0)
  })
  test('byte ranges answer 206 with the right slice', async () => {
    let res = await t.fetch(path(jpeg.url), { headers: { range: 'bytes=10-109' } })
    expect(res.status).toBe(206)
    expect(res.headers.get('content-range')).toBe(`bytes 10-109/${jpegBytes.length}`)
    expect(new Uint8Array(await res.arrayBuffer())).toEqual(jpegBytes.slice(10, 110))
    res = await t.fetch(path(jpeg.url), { headers: { range: 'bytes=-50' } })
    expect(res.status).toBe(206)
    expect(new Uint8Array(await res.arrayBuffer())).toEqual(jpegBytes.slice(-50))
    res = await t.fetch(path(jpeg.url), { headers: { range: `bytes=${jpegBytes.length + 10}-` } })
    expect(res.status).toBe(416)
  })
  test('a wrong extension, an unknown id and traversal attempts: 404', async () => {
    for (const p of [
      `/cdn/${jpeg.id}.png`,
      '/cdn/AAAAAAAA.jpg',
      '/cdn/..%2F..%2Fimghost.sqlite',
      '/cdn/%2e%2e%2fjwt-secret',
      '/cdn/medium/..%2Foriginals%2Fx.webp',
      `/cdn/${jpeg.id}.jpg%00.png`,
      '/cdn/../imghost.sqlite',
    ]) {
      const res = await t.fetch(p)
      expect(res.status).toBe(404)
    }
  })
})

describe('/cdn/medium/<id>.webp', () => {
  test('is a WebP within 500x500 keeping the aspect ratio', async () => {
    const res = await t.fetch(path(jpeg.thumbnail))
    expect(res.status).toBe(200)
    expect(res.headers.get('content-type')).toBe('image/webp')
    expect(res.headers.get('cache-control')).toBe('public, max-age=31536000, immutable')
    const meta = await sharp(Buffer.from(await res.arrayBuffer())).metadata()
    expect(meta.format).toBe('webp')
    expect([meta.width, meta.height]).toEqual([500, 333])
  })
  test('nosniff, ETag with 304, HEAD and ranges, like the original', async () => {
    const full = await t.fetch(path(jpeg.thumbnail))
    const bytes = new Uint8Array(await full.arrayBuffer())
    expect(full.headers.get('x-content-type-options')).toBe('nosniff')
    expect(Number(full.headers.get('content-length'))).toBe(bytes.length)
    const etag = full.headers.get('etag')
    expect(etag).toBeTruthy()
    expect(etag).not.toBe((await t.fetch(path(jpeg.url), { method: 'HEAD' })).headers.get('etag'))
    const cached = await t.fetch(path(jpeg.thumbnail), { headers: { 'if-none-match': etag! } })
    expect(cached.status).toBe(304)
    expect((await cached.arrayBuffer()).byteLength).toBe(0)
    const head = await t.fetch(path(jpeg.thumbnail), { method: 'HEAD' })
    expect(head.status).toBe(200)
    expect(head.headers.get('content-type')).toBe('image/webp')
    expect(Number(head.headers.get('content-length'))).toBe(bytes.length)
    expect((await head.arrayBuffer()).byteLength).toBe(0)
    const part = await t.fetch(path(jpeg.thumbnail), { headers: { range: 'bytes=0-99' } })
    expect(part.status).toBe(206)
    expect(new Uint8Array(await part.arrayBuffer())).toEqual(bytes.slice(0, 100))
  })
  test('small images are never enlarged', async () => {
    const small = (
      await t.json('/api/v1/upload', {
        method: 'POST',
        headers: owner.keyHeader,
        body: uploadForm([{ bytes: await makeImage('png', 40, 30) }]),
      })
    ).body
    const meta = await sharp(Buffer.from(await (await t.fetch(path(small.thumbnail))).arrayBuffer())).metadata()
    expect([meta.width, meta.height]).toEqual([40, 30])
  })
  test('animated GIFs get animated thumbnails, and report the canvas size', async () => {
    const gif = await makeAnimatedGif(60, 40, 3)
    const up = (
      await t.json('/api/v1/upload', {
        method: 'POST',
        headers: owner.keyHeader,
        body: uploadForm([{ bytes: gif, name: 'anim.gif' }]),
      })
    ).body
    expect([up.width, up.height]).toEqual([60, 40])
    const meta = await sharp(Buffer.from(await (await t.fetch(path(up.thumbnail))).arrayBuffer())).metadata()
    expect(meta.format).toBe('webp')
    expect(meta.pages).toBe(3)
  })
})

describe('SVG', () => {
  test('is served with a sandboxing CSP and nosniff', async () => {
    const svg = svgImage(100, 100, '<script>alert(1)</script>')
    const up = (
      await t.json('/api/v1/upload', {
        method: 'POST',
        headers: owner.keyHeader,
        body: uploadForm([{ bytes: svg, name: 'x.svg' }]),
      })
    ).body
    const res = await t.fetch(path(up.url))
    expect(res.status).toBe(200)
    expect(res.headers.get('content-type')).toBe('image/svg+xml')
    expect(res.headers.get('content-security-policy')).toBe("default-src 'none'; style-src 'unsafe-inline'; sandbox")
    expect(res.headers.get('x-content-type-options')).toBe('nosniff')
  })
})
