import { afterAll, beforeAll, describe, expect, test } from 'bun:test'
import type { Browser } from 'playwright-core'
import { launchBrowser, newIsolatedPage } from '../browser'
import { makeImage } from '../fixtures'
import { type TestServer, userWithKey } from '../helpers'
import { send, startServer, uploadImage } from './support'

// A local recorder: any script that runs anywhere (browser or server) reports here, and it also serves the same SVG
// without our headers, as the positive control proving the payload really runs when nothing stops it.
const hits: string[] = []
let recorder: ReturnType<typeof Bun.serve>
let t: TestServer
let browser: Browser
let owner: Awaited<ReturnType<typeof userWithKey>>
let svg: Awaited<ReturnType<typeof uploadImage>>
let svgBytes: Uint8Array<ArrayBuffer>

function maliciousSvg(base: string) {
  const beacon = (name: string) =>
    `fetch('${base}/hit/${name}').catch(function(){});document.title='pwned-${name}';window.__pwned='${name}'`
  return new TextEncoder().encode(`<?xml version="1.0"?>
<svg xmlns="http://www.w3.org/2000/svg" xmlns:xlink="http://www.w3.org/1999/xlink" width="120" height="80" onload="${beacon('onload')}">
<title>harmless</title>
<rect width="100%" height="100%" fill="#3b82f6"/>
<script type="text/javascript"><![CDATA[ ${beacon('script')} ]]></script>
<script href="${base}/hit/external-script.js"/>
<image href="${base}/hit/image.png" x="0" y="0" width="1" height="1"/>
<a xlink:href="javascript:${beacon('link')}"><rect width="10" height="10" fill="#000"/></a>
<foreignObject width="10" height="10"><body xmlns="http://www.w3.org/1999/xhtml"><img src="x" onerror="${beacon('foreign')}"/></body></foreignObject>
</svg>`)
}

/** What a malicious filename or title would do if it reached the DOM as markup. */
const markup = (base: string) => `"><img src=x onerror="fetch('${base}/hit/markup');window.__pwned='markup'">`

beforeAll(async () => {
  recorder = Bun.serve({
    hostname: '127.0.0.1',
    port: 0,
    fetch(request) {
      const path = new URL(request.url).pathname
      if (path === '/control.svg') return new Response(svgBytes, { headers: { 'content-type': 'image/svg+xml' } })
      hits.push(path)
      return new Response('', { headers: { 'access-control-allow-origin': '*' } })
    },
  })
  const base = `http://127.0.0.1:${recorder.port}`
  svgBytes = maliciousSvg(base)
  t = await startServer()
  owner = await userWithKey(t)
  browser = await launchBrowser()
  svg = await uploadImage(t, owner.keyHeader, {}, { bytes: svgBytes, name: `${markup(base)}.svg` })
}, 30_000)
afterAll(async () => {
  await browser?.close()
  await t?.stop()
  recorder?.stop(true)
})

/** Opens a page, waits for anything a script might do, and reports what happened. */
async function visit(url: string, waitMs = 1500) {
  const p = await newIsolatedPage(browser, t.url)
  const before = hits.length
  try {
    const response = await p.page.goto(url, { waitUntil: 'load' })
    await p.page.waitForTimeout(waitMs)
    const title = await p.page.title().catch(() => '')
    const pwned = await p.page
      .evaluate(() => (window as unknown as { __pwned?: string }).__pwned ?? null)
      .catch(() => null)
    return {
      status: response?.status(),
      title,
      pwned,
      newHits: hits.slice(before),
      isolated: p,
      page: p.page,
      close: () => p.close(),
    }
  } catch (error) {
    await p.close()
    throw error
  }
}

describe('an SVG with scripts never executes', () => {
  test('uploading and thumbnailing it made no request anywhere (no server-side fetch of its links)', () => {
    expect(svg.url).toEndWith('.svg')
    expect(hits).toEqual([])
  })

  test('positive control: the same bytes served without our headers DO run (so the checks below can see it)', async () => {
    const direct = await visit(`http://127.0.0.1:${recorder.port}/control.svg`)
    try {
      expect(direct.newHits).toContain('/hit/script')
      expect(direct.newHits).toContain('/hit/onload')
      expect(direct.title).toStartWith('pwned-')
    } finally {
      await direct.close()
    }
  }, 30_000)

  test('opened directly at its /cdn URL: no script, no onload handler, no load of its links', async () => {
    const direct = await visit(svg.url)
    try {
      expect(direct.status).toBe(200)
      expect(direct.newHits).toEqual([])
      expect(direct.title).not.toStartWith('pwned')
      expect(direct.pwned).toBeNull()
      // The click-through javascript: link does nothing either.
      await direct.page.mouse.click(5, 5).catch(() => {})
      await direct.page.waitForTimeout(300)
      expect(hits.filter((h) => h.includes('link'))).toEqual([])
    } finally {
      await direct.close()
    }
  }, 30_000)

  test('embedded via <img> on the viewer page (and the album and gallery pages): nothing runs', async () => {
    const album = (await t.json('/api/albums', send('POST', { title: 'svg album', isPublic: true }, owner.bearer))).body
      .album
    await t.json(`/api/albums/${album.id}/images`, send('POST', { imageId: svg.id }, owner.bearer))
    for (const path of [`/i/${svg.id}`, `/a/${album.id}`, '/gallery']) {
      const v = await visit(t.url + path)
      try {
        expect(v.status, path).toBe(200)
        if (path.startsWith('/i/')) {
          // The SVG itself is on the page and rendered.
          const width = await v.page
            .locator('figure.viewer img')
            .evaluate((img: HTMLImageElement) => img.complete && img.naturalWidth)
          expect(width).toBe(120)
        }
        expect(v.newHits, path).toEqual([])
        expect(v.pwned, path).toBeNull()
        expect(v.title, path).not.toStartWith('pwned')
        expect(v.isolated.pageErrors, path).toEqual([])
      } finally {
        await v.close()
      }
    }
  }, 30_000)

  test('the thumbnail is a raster WebP: nothing in it can run', async () => {
    const res = await fetch(svg.thumbnail)
    expect(res.headers.get('content-type')).toBe('image/webp')
    const bytes = new Uint8Array(await res.arrayBuffer())
    expect(new TextDecoder().decode(bytes.slice(8, 12))).toBe('WEBP')
  })
})

describe('user strings never become markup in the browser', () => {
  test('a malicious filename and album title on the viewer, album and gallery pages and the dashboard', async () => {
    const base = `http://127.0.0.1:${recorder.port}`
    const image = await uploadImage(
      t,
      owner.keyHeader,
      {},
      { bytes: await makeImage('png', 40, 30, 77), name: `${markup(base)}.png` },
    )
    const album = (
      await t.json(
        '/api/albums',
        send('POST', { title: markup(base), description: markup(base), isPublic: true }, owner.bearer),
      )
    ).body.album
    await t.json(`/api/albums/${album.id}/images`, send('POST', { imageId: image.id }, owner.bearer))
    await t.json(
      '/api/embeds',
      send('POST', { name: markup(base), title: markup(base), description: markup(base) }, owner.bearer),
    )

    for (const path of [`/i/${image.id}`, `/a/${album.id}`, '/gallery', `/u/${owner.user.username}`]) {
      const v = await visit(t.url + path, 800)
      try {
        expect(v.newHits, path).toEqual([])
        expect(v.pwned, path).toBeNull()
      } finally {
        await v.close()
      }
    }

    // The dashboard renders the same strings client-side, from the API.
    const p = await newIsolatedPage(browser, t.url)
    try {
      await p.page.goto(`${t.url}/login`)
      await p.page.evaluate((token) => localStorage.setItem('imghost.token', token), owner.token)
      const before = hits.length
      await p.page.goto(`${t.url}/dashboard`, { waitUntil: 'load' })
      await p.page.waitForTimeout(1500)
      // Visit every tab the dashboard has, so every list gets rendered.
      for (const tab of await p.page.locator('[role="tab"], nav a[href^="#"]').all()) await tab.click().catch(() => {})
      await p.page.waitForTimeout(800)
      expect(hits.slice(before)).toEqual([])
      expect(await p.page.evaluate(() => (window as unknown as { __pwned?: string }).__pwned ?? null)).toBeNull()
      // The filename is there, as text.
      expect(await p.page.content()).toContain('onerror=')
      expect(await p.page.locator('img[src="x"]').count()).toBe(0)
    } finally {
      await p.close()
    }
  }, 30_000)
})
