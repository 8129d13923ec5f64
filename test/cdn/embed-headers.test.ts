import { afterAll, beforeAll, describe, expect, test } from 'bun:test'
import type { Browser } from 'playwright-core'
import { launchBrowser, newIsolatedPage } from '../browser'
import { makeImage } from '../fixtures'
import { jsonBody, startTestServer, type TestServer, userWithKey } from '../helpers'
import { pathOf, upload } from '../variants/support'

let t: TestServer
let owner: Awaited<ReturnType<typeof userWithKey>>
let image: { id: string; url: string; thumbnail: string }
/** The upload's time, in whole seconds either side (Last-Modified has no finer unit). */
let uploadedFrom: number
let uploadedTo: number

beforeAll(async () => {
  t = await startTestServer()
  owner = await userWithKey(t)
  uploadedFrom = Math.floor(Date.now() / 1000) * 1000
  image = await upload(t, owner.keyHeader, await makeImage('png', 120, 80), 'embed.png')
  uploadedTo = Date.now()
})
afterAll(() => t.stop())

function expectEmbeddable(res: Response, from = uploadedFrom, to = uploadedTo) {
  expect(res.headers.get('cross-origin-resource-policy')).toBe('cross-origin')
  expect(res.headers.get('access-control-allow-origin')).toBe('*')
  const modified = Date.parse(res.headers.get('last-modified')!)
  expect(modified).toBeGreaterThanOrEqual(from)
  expect(modified).toBeLessThanOrEqual(to)
  // The other headers stay.
  expect(res.headers.get('etag')).toBeTruthy()
  expect(res.headers.get('cache-control')).toBe('public, max-age=31536000, immutable')
  expect(res.headers.get('x-content-type-options')).toBe('nosniff')
}

describe('/cdn answers are embeddable', () => {
  test('original, thumbnail, preset and signed variant carry CORP, ACAO and Last-Modified', async () => {
    const signed = await t.json(`/api/v1/image/${image.id}/variants`, {
      method: 'POST',
      ...jsonBody({ width: 50, format: 'webp' }, owner.keyHeader),
    })
    expect(signed.status).toBe(200)
    for (const url of [image.url, image.thumbnail, `/cdn/small/${image.id}.png`, signed.body.url]) {
      const path = url.startsWith('/') ? url : pathOf(url)
      // Twice: the first answer of a file and the one built from what the first learned.
      for (let i = 0; i < 2; i++) {
        const res = await t.fetch(path)
        expect(res.status).toBe(200)
        expectEmbeddable(res)
        await res.arrayBuffer()
      }
    }
  })

  test('HEAD and a range request carry them too', async () => {
    const head = await t.fetch(pathOf(image.url), { method: 'HEAD' })
    expect(head.status).toBe(200)
    expectEmbeddable(head)
    const range = await t.fetch(pathOf(image.url), { headers: { range: 'bytes=0-9' } })
    expect(range.status).toBe(206)
    expectEmbeddable(range)
    expect((await range.arrayBuffer()).byteLength).toBe(10)
  })

  test('an SVG keeps its CSP beside them', async () => {
    const svg = '<svg xmlns="http://www.w3.org/2000/svg" width="10" height="10"><rect width="10" height="10"/></svg>'
    const from = Math.floor(Date.now() / 1000) * 1000
    const up = await upload(t, owner.keyHeader, new TextEncoder().encode(svg), 'a.svg')
    const to = Date.now()
    const res = await t.fetch(pathOf(up.url))
    expect(res.headers.get('content-security-policy')).toContain('sandbox')
    expectEmbeddable(res, from, to)
  })

  test('If-Modified-Since at or after Last-Modified answers 304, before it 200', async () => {
    for (const url of [image.url, image.thumbnail, `/cdn/small/${image.id}.webp`]) {
      const path = url.startsWith('/') ? url : pathOf(url)
      const modified = (await t.fetch(path, { method: 'HEAD' })).headers.get('last-modified')!
      const at = await t.fetch(path, { headers: { 'if-modified-since': modified } })
      expect(at.status).toBe(304)
      expect((await at.arrayBuffer()).byteLength).toBe(0)
      expectEmbeddable(at)
      const after = new Date(Date.parse(modified) + 60_000).toUTCString()
      expect((await t.fetch(path, { headers: { 'if-modified-since': after } })).status).toBe(304)
      const before = new Date(Date.parse(modified) - 1000).toUTCString()
      const full = await t.fetch(path, { headers: { 'if-modified-since': before } })
      expect(full.status).toBe(200)
      expect((await full.arrayBuffer()).byteLength).toBeGreaterThan(0)
      expect((await t.fetch(path, { headers: { 'if-modified-since': 'not a date' } })).status).toBe(200)
    }
  })

  test('If-None-Match decides over If-Modified-Since', async () => {
    const first = await t.fetch(pathOf(image.url), { method: 'HEAD' })
    const modified = first.headers.get('last-modified')!
    const stale = await t.fetch(pathOf(image.url), {
      headers: { 'if-none-match': '"other"', 'if-modified-since': modified },
    })
    expect(stale.status).toBe(200)
    await stale.arrayBuffer()
    const before = new Date(Date.parse(modified) - 1000).toUTCString()
    const matching = await t.fetch(pathOf(image.url), {
      headers: { 'if-none-match': first.headers.get('etag')!, 'if-modified-since': before },
    })
    expect(matching.status).toBe(304)
  })

  test.if(process.env.STORAGE === 's3')('S3_SERVE=redirect: the redirect carries CORP and ACAO', async () => {
    const r = await startTestServer({ S3_SERVE: 'redirect' })
    try {
      const key = await userWithKey(r)
      const up = await upload(r, key.keyHeader, await makeImage('png', 30, 20, 5), 'r.png')
      const res = await r.fetch(pathOf(up.url), { redirect: 'manual' })
      expect(res.status).toBe(302)
      expect(res.headers.get('cross-origin-resource-policy')).toBe('cross-origin')
      expect(res.headers.get('access-control-allow-origin')).toBe('*')
    } finally {
      await r.stop()
    }
  })
})

describe('in a real browser', () => {
  let browser: Browser
  let other: ReturnType<typeof Bun.serve>
  beforeAll(async () => {
    browser = await launchBrowser()
  })
  afterAll(async () => {
    await browser?.close()
    other?.stop(true)
  })

  test('a page of another origin with COEP require-corp shows the image and reads it back from a canvas', async () => {
    // The server is http://localhost:<port>; the page comes from 127.0.0.1: another site altogether.
    const src = `${t.url}/cdn/${new URL(image.url).pathname.slice('/cdn/'.length)}`
    const html = `<!doctype html><title>embed</title>
<img id="plain" src="${src}">
<img id="cors" crossorigin="anonymous" src="${src}">`
    other = Bun.serve({
      hostname: '127.0.0.1',
      port: 0,
      fetch: () =>
        new Response(html, {
          headers: {
            'content-type': 'text/html; charset=utf-8',
            'cross-origin-embedder-policy': 'require-corp',
            'cross-origin-opener-policy': 'same-origin',
          },
        }),
    })
    const p = await newIsolatedPage(browser, t.url)
    try {
      await p.page.goto(`http://127.0.0.1:${other.port}/`, { waitUntil: 'load' })
      const result = await p.page.evaluate(() => {
        const plain = document.getElementById('plain') as HTMLImageElement
        const cors = document.getElementById('cors') as HTMLImageElement
        const canvas = document.createElement('canvas')
        canvas.width = cors.naturalWidth
        canvas.height = cors.naturalHeight
        const ctx = canvas.getContext('2d')!
        ctx.drawImage(cors, 0, 0)
        try {
          return {
            isolated: crossOriginIsolated,
            plain: plain.naturalWidth,
            cors: cors.naturalWidth,
            pixels: ctx.getImageData(0, 0, canvas.width, canvas.height).data.length,
          }
        } catch (error) {
          return {
            isolated: crossOriginIsolated,
            plain: plain.naturalWidth,
            cors: cors.naturalWidth,
            error: String(error),
          }
        }
      })
      expect(result).toEqual({ isolated: true, plain: 120, cors: 120, pixels: 120 * 80 * 4 })
      expect(p.pageErrors).toEqual([])
    } finally {
      await p.close()
    }
  })
})
