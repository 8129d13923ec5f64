import { afterAll, beforeAll, describe, expect, test } from 'bun:test'
import type { Browser } from 'playwright-core'
import { ConfigError, loadConfig } from '../../src/config'
import { launchBrowser, newIsolatedPage } from '../browser'
import { startTestServer, type TestServer, userWithKey } from '../helpers'
import { uploadImage } from '../pages/support'

// CORS on the public JSON reads (src/http/cors.ts), over real HTTP: what a page on another site may read, and what it
// may not (the authenticated reads, credentials). The browser test at the end lets Chromium itself judge the headers.

const ELSEWHERE = 'https://static.example'

let t: TestServer
let owner: Awaited<ReturnType<typeof userWithKey>>
let imageId: string
beforeAll(async () => {
  t = await startTestServer()
  owner = await userWithKey(t)
  imageId = (await uploadImage(t, owner.keyHeader, {}, { name: 'sunset.png' })).id
})
afterAll(() => t.stop())

const fromElsewhere = (server: TestServer, path: string, init: RequestInit = {}, origin = ELSEWHERE) =>
  server.fetch(path, { ...init, headers: { origin, ...(init.headers as Record<string, string>) } })

/** The public reads, each as a page would ask for it (the image metadata is answered ahead of the app). */
const publicReads = () => [
  `/api/v1/image/${imageId}`,
  '/api/gallery',
  '/api/search?q=sunset',
  `/api/users/${owner.user.username}`,
  `/api/oembed?url=${encodeURIComponent(`${t.url}/i/${imageId}`)}`,
]

describe('CORS_ORIGINS=* (the default)', () => {
  test('every public JSON read, GET and HEAD: Access-Control-Allow-Origin *, never with credentials', async () => {
    for (const path of publicReads()) {
      for (const method of ['GET', 'HEAD']) {
        const res = await fromElsewhere(t, path, { method })
        expect({ path, method, status: res.status }).toEqual({ path, method, status: 200 })
        expect(res.headers.get('access-control-allow-origin')).toBe('*')
        expect(res.headers.get('access-control-allow-credentials')).toBeNull()
        expect(res.headers.get('access-control-expose-headers')).toContain('Retry-After')
      }
    }
  })

  test('their errors too, so a page can read why: a 404 ahead of the app and in it, a 400', async () => {
    for (const path of ['/api/v1/image/Zz9Zz9Zz', '/api/users/nobody-here', '/api/gallery?page=abc']) {
      const res = await fromElsewhere(t, path)
      expect(res.status).toBeGreaterThanOrEqual(400)
      expect(res.headers.get('access-control-allow-origin')).toBe('*')
      expect(typeof ((await res.json()) as { error: unknown }).error).toBe('string')
    }
  })

  test('not the authenticated reads, not the writes, not the pages', async () => {
    const keyed = { headers: owner.keyHeader }
    for (const [path, init] of [
      ['/api/v1/images', keyed],
      ['/api/v1/me', keyed],
      ['/api/albums', { headers: owner.bearer }],
      ['/api/auth/me', { headers: owner.bearer }],
      ['/gallery', {}],
      ['/healthz', {}],
    ] as [string, RequestInit][]) {
      const res = await fromElsewhere(t, path, init)
      expect({ path, status: res.status }).toEqual({ path, status: 200 })
      expect({ path, allow: res.headers.get('access-control-allow-origin') }).toEqual({ path, allow: null })
    }
    const patch = await fromElsewhere(t, `/api/v1/image/${imageId}`, {
      method: 'PATCH',
      headers: { ...owner.keyHeader, 'content-type': 'application/json' },
      body: JSON.stringify({ nsfw: false }),
    })
    expect(patch.status).toBe(200)
    expect(patch.headers.get('access-control-allow-origin')).toBeNull()
  })

  test('the preflight: 204 with GET and HEAD and no credential header, also ahead of the app', async () => {
    for (const path of publicReads()) {
      const res = await fromElsewhere(t, path, {
        method: 'OPTIONS',
        headers: { 'access-control-request-method': 'GET', 'access-control-request-headers': 'if-none-match' },
      })
      expect({ path, status: res.status }).toEqual({ path, status: 204 })
      expect(res.headers.get('access-control-allow-origin')).toBe('*')
      expect(res.headers.get('access-control-allow-methods')).toBe('GET, HEAD')
      const headers = (res.headers.get('access-control-allow-headers') ?? '').toLowerCase()
      expect(headers).toContain('if-none-match')
      expect(headers).not.toContain('authorization')
      expect(headers).not.toContain('x-api-key')
      expect(res.headers.get('access-control-allow-credentials')).toBeNull()
    }
  })
})

describe('CORS_ORIGINS as a list, and off', () => {
  let listed: TestServer
  let off: TestServer
  beforeAll(async () => {
    listed = await startTestServer({ CORS_ORIGINS: `${ELSEWHERE}, https://other.example:8443` })
    off = await startTestServer({ CORS_ORIGINS: 'off' })
  })
  afterAll(async () => {
    await listed.stop()
    await off.stop()
  })

  test('a listed origin is echoed, any other gets none; every answer varies by Origin', async () => {
    for (const path of ['/api/gallery', '/api/v1/image/Zz9Zz9Zz']) {
      const mine = await fromElsewhere(listed, path)
      expect(mine.headers.get('access-control-allow-origin')).toBe(ELSEWHERE)
      expect(mine.headers.get('vary')).toContain('Origin')
      const port = await fromElsewhere(listed, path, {}, 'https://other.example:8443')
      expect(port.headers.get('access-control-allow-origin')).toBe('https://other.example:8443')
      const stranger = await fromElsewhere(listed, path, {}, 'https://evil.example')
      expect(stranger.headers.get('access-control-allow-origin')).toBeNull()
      expect(stranger.headers.get('vary')).toContain('Origin')
      const none = await listed.fetch(path)
      expect(none.headers.get('access-control-allow-origin')).toBeNull()
      expect(none.headers.get('vary')).toContain('Origin')
    }
    const preflight = await fromElsewhere(listed, '/api/gallery', {
      method: 'OPTIONS',
      headers: { 'access-control-request-method': 'GET' },
    })
    expect(preflight.status).toBe(204)
    expect(preflight.headers.get('access-control-allow-origin')).toBe(ELSEWHERE)
  })

  test('off: no CORS header, and no preflight', async () => {
    for (const path of ['/api/gallery', '/api/v1/image/Zz9Zz9Zz']) {
      expect((await fromElsewhere(off, path)).headers.get('access-control-allow-origin')).toBeNull()
    }
    const preflight = await fromElsewhere(off, '/api/gallery', {
      method: 'OPTIONS',
      headers: { 'access-control-request-method': 'GET' },
    })
    expect(preflight.status).toBe(405)
    expect(preflight.headers.get('access-control-allow-origin')).toBeNull()
  })

  test('a malformed CORS_ORIGINS stops the start, naming it', () => {
    for (const value of ['https://a.example/path', 'ftp://a.example', 'a.example', '*,https://a.example']) {
      expect(() => loadConfig({ CORS_ORIGINS: value })).toThrow(ConfigError)
      expect(() => loadConfig({ CORS_ORIGINS: value })).toThrow(/CORS_ORIGINS/)
    }
  })
})

describe('in Chromium: a page on another origin', () => {
  let browser: Browser
  let site: ReturnType<typeof Bun.serve>
  let off: TestServer
  beforeAll(async () => {
    browser = await launchBrowser()
    off = await startTestServer({ CORS_ORIGINS: 'off' })
    // A static site on another origin (127.0.0.1 and another port; the host answers on localhost).
    site = Bun.serve({
      hostname: '127.0.0.1',
      port: 0,
      fetch: () =>
        new Response('<!doctype html><title>static site</title>', { headers: { 'content-type': 'text/html' } }),
    })
  })
  afterAll(async () => {
    await browser?.close()
    site?.stop(true)
    await off?.stop()
  })

  /** What the page's fetch of `url` gives: the JSON's image count, or the error the browser raised. */
  async function readFromPage(url: string) {
    const { page, close } = await newIsolatedPage(browser, `http://127.0.0.1:${site.port}`)
    try {
      await page.goto(`http://127.0.0.1:${site.port}/`)
      return await page.evaluate(
        (target) =>
          fetch(target).then(
            async (res) => `read ${((await res.json()) as { images: unknown[] }).images.length}`,
            (error: Error) => `refused: ${error.name}`,
          ),
        url,
      )
    } finally {
      await close()
    }
  }

  test('reads the gallery JSON with the default, and is refused by the browser when CORS is off', async () => {
    expect(await readFromPage(`${t.url}/api/gallery`)).toBe('read 1')
    expect(await readFromPage(`${off.url}/api/gallery`)).toBe('refused: TypeError')
  })
})
