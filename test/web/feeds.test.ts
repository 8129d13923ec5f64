import { afterAll, beforeAll, describe, expect, setDefaultTimeout, test } from 'bun:test'
import { parse } from 'node-html-parser'
import type { Browser } from 'playwright-core'
import { launchBrowser } from '../browser'
import { userWithKey } from '../helpers'
import { send, uploadImage } from '../pages/support'
import { expectClean, openPage, shoot, startWebServer, tabUntil, type WebServer, waitForImages } from './support'

setDefaultTimeout(60_000)

let t: WebServer
let browser: Browser
let owner: Awaited<ReturnType<typeof userWithKey>>

beforeAll(async () => {
  t = await startWebServer()
  owner = await userWithKey(t, 'gallerist')
  browser = await launchBrowser()
})
afterAll(async () => {
  await browser?.close()
  await t?.stop()
})

const page = async (path: string) => {
  const res = await t.fetch(path)
  return { status: res.status, headers: res.headers, doc: parse(await res.text()) }
}

describe('gallery page', () => {
  test('shows public images, linked to their viewer pages and uploaders, and not private or NSFW ones', async () => {
    const pub = await uploadImage(t, owner.keyHeader, {}, { name: 'harbour.png', width: 320, height: 200 })
    const priv = await uploadImage(t, owner.keyHeader, { visibility: 'private' }, { name: 'diary.png' })
    const nsfw = await uploadImage(t, owner.keyHeader, { nsfw: 'true' })
    const p = await openPage(browser, t, '/gallery')
    try {
      const hrefs = await p.page.locator('.grid a.thumb').evaluateAll((els) => els.map((el) => el.getAttribute('href')))
      expect(hrefs).toContain(pub.viewer)
      expect(hrefs).not.toContain(priv.viewer)
      expect(hrefs).not.toContain(nsfw.viewer)
      const tile = p.page.locator(`.tile:has(a.thumb[href="${pub.viewer}"])`)
      expect(await tile.locator('img').getAttribute('alt')).toBe('harbour.png')
      // The <picture>'s fallback; Chromium takes the AVIF source (test/pages/picture-browser.test.ts).
      expect(await tile.locator('img').getAttribute('src')).toBe(pub.thumbnail.replace(/\.webp$/, '.jpg'))
      expect(await tile.locator('.tile-meta a').getAttribute('href')).toBe('/u/gallerist')
      await waitForImages(p.page)
      expect(await tile.locator('img').evaluate((el: HTMLImageElement) => el.naturalWidth)).toBeGreaterThan(0)
      expect(await tile.locator('img').evaluate((el: HTMLImageElement) => el.currentSrc)).toBe(
        pub.thumbnail.replace('/medium/', '/small/').replace(/\.webp$/, '.avif'),
      )
      await shoot(p.page, 'gallery')
      // The thumbnail opens the viewer page.
      await Promise.all([p.page.waitForNavigation(), tile.locator('a.thumb').click()])
      expect(p.page.url()).toBe(pub.viewer)
      expectClean(p)
    } finally {
      await p.close()
    }
  })

  test('search narrows the gallery; pages past the end and bad page numbers are 404 pages', async () => {
    await uploadImage(t, owner.keyHeader, {}, { name: 'lighthouse-at-dusk.png' })
    const found = await page('/gallery?q=lighthouse')
    expect(found.status).toBe(200)
    expect(found.doc.querySelectorAll('.grid img').map((img) => img.getAttribute('alt'))).toEqual([
      'lighthouse-at-dusk.png',
    ])
    expect(found.doc.querySelector('meta[name="robots"]')?.getAttribute('content')).toBe('noindex')
    const none = await page('/gallery?q=zebra')
    expect(none.doc.querySelector('.notice')!.text).toContain('Nothing matches')
    const bad = await page('/gallery?q=%20%21%21')
    expect(bad.status).toBe(200)
    expect(bad.doc.querySelector('.error')!.text).toContain('letter or digit')
    expect((await page('/gallery?page=99')).status).toBe(404)
    expect((await page('/gallery?page=0')).status).toBe(404)
    expect((await page('/gallery?page=abc')).status).toBe(404)
    const hostile = await page('/gallery?q=%3Cscript%3Ealert(1)%3C%2Fscript%3E')
    expect(hostile.doc.querySelectorAll('script').every((s) => s.getAttribute('src'))).toBe(true)
  })

  test('pages through the gallery with Older / Newer links', async () => {
    const paged = await startWebServer()
    try {
      const user = await userWithKey(paged)
      for (let i = 0; i < 31; i++) await uploadImage(paged, user.keyHeader)
      const first = parse(await (await paged.fetch('/gallery')).text())
      expect(first.querySelectorAll('.grid li')).toHaveLength(30)
      // The links pin the list (asOf): an upload between two pages shifts nothing.
      const next = first.querySelector('a[rel="next"]')!.getAttribute('href')!
      const asOf = (await paged.json('/api/gallery')).body.asOf
      expect(next).toBe(`/gallery?page=2&asOf=${asOf}`)
      expect(first.querySelector('a[rel="prev"]')).toBeNull()
      await uploadImage(paged, user.keyHeader)
      const second = parse(await (await paged.fetch(next)).text())
      expect(second.querySelectorAll('.grid li')).toHaveLength(1)
      expect(second.querySelector('a[rel="prev"]')!.getAttribute('href')).toBe(`/gallery?asOf=${asOf}`)
      expect(second.querySelector('.pager')!.text).toContain('Page 2 of 2')
    } finally {
      await paged.stop()
    }
  })
})

describe('profile page', () => {
  test('NSFW thumbnails are blurred until revealed (by keyboard too); private images are left out', async () => {
    const user = await userWithKey(t, 'mature_artist')
    const safe = await uploadImage(t, user.keyHeader, {}, { name: 'safe.png' })
    const mature = await uploadImage(t, user.keyHeader, { nsfw: 'true' }, { name: 'mature.png' })
    const priv = await uploadImage(t, user.keyHeader, { visibility: 'private' })
    const p = await openPage(browser, t, '/u/mature_artist')
    try {
      expect(await p.page.textContent('h1')).toBe('mature_artist')
      expect(await p.page.textContent('.profile-head p')).toContain('2 public images')
      const hrefs = await p.page.locator('.grid a.thumb').evaluateAll((els) => els.map((el) => el.getAttribute('href')))
      expect(hrefs).toEqual([mature.viewer, safe.viewer])
      expect(hrefs).not.toContain(priv.viewer)

      const tile = p.page.locator('.tile.nsfw')
      const img = tile.locator('img')
      await waitForImages(p.page)
      // The thumbnail is loaded by script (never in the markup) and blurred behind a badge.
      expect(await img.getAttribute('src')).toBe(mature.thumbnail)
      expect(await img.evaluate((el) => getComputedStyle(el).filter)).toContain('blur')
      expect(await tile.locator('.badge').textContent()).toBe('NSFW')
      expect(await p.page.locator(`.tile:not(.nsfw) img`).evaluate((el) => getComputedStyle(el).filter)).toBe('none')
      await shoot(p.page, 'profile-nsfw-hidden')

      // Tab to the Show button and press it: the thumbnail is unblurred and the focus moves to its link.
      const focused = await tabUntil(p.page, (f) => f.text === 'Show')
      expect(focused.at(-1)!.label).toBe('Show mature image mature.png')
      await p.page.keyboard.press('Enter')
      expect(await img.evaluate((el) => getComputedStyle(el).filter)).toBe('none')
      expect(await p.page.isVisible('.tile.nsfw .reveal')).toBe(false)
      expect(await p.page.evaluate(() => document.activeElement?.getAttribute('href'))).toBe(mature.viewer)
      await shoot(p.page, 'profile-nsfw-revealed')
      expectClean(p)
    } finally {
      await p.close()
    }
  })

  test('an unknown user gets the 404 page', async () => {
    const res = await page('/u/nobody_here')
    expect(res.status).toBe(404)
    expect(res.doc.querySelector('h1')!.text).toContain('Not found')
    expect(res.headers.get('content-type')).toBe('text/html; charset=utf-8')
    // Names are matched case-insensitively; the page shows the real spelling.
    const mixed = await page('/u/GALLERIST')
    expect(mixed.status).toBe(200)
    expect(mixed.doc.querySelector('h1')!.text).toBe('gallerist')
  })
})

describe('album page', () => {
  test('NSFW thumbnails are blurred with a Show button', async () => {
    const album = (await t.json('/api/albums', send('POST', { title: 'Mixed', isPublic: true }, owner.bearer))).body
      .album
    const safe = await uploadImage(t, owner.keyHeader)
    const mature = await uploadImage(t, owner.keyHeader, { nsfw: 'true' })
    for (const image of [safe, mature])
      await t.json(`/api/albums/${album.id}/images`, send('POST', { imageId: image.id }, owner.bearer))
    const p = await openPage(browser, t, `/a/${album.id}`)
    try {
      await waitForImages(p.page)
      const img = p.page.locator('.tile.nsfw img')
      expect(await img.evaluate((el) => getComputedStyle(el).filter)).toContain('blur')
      await shoot(p.page, 'album-nsfw')
      await p.page.click('.tile.nsfw [data-reveal]')
      expect(await img.evaluate((el) => getComputedStyle(el).filter)).toBe('none')
      expect(await p.page.locator('.album-head a').getAttribute('href')).toBe('/u/gallerist')
      expectClean(p)
    } finally {
      await p.close()
    }
  })
})

describe('every page', () => {
  test('carries the header navigation and the security headers; nothing is loaded from another host', async () => {
    const paths = ['/', '/gallery', '/u/gallerist', '/login', '/register', '/verify', '/forgot', '/reset', '/logout']
    for (const path of [...paths, '/dashboard']) {
      const res = await page(path)
      expect({ path, status: res.status }).toEqual({ path, status: 200 })
      expect(res.headers.get('content-security-policy')).toContain("script-src 'self'")
      const nav = res.doc.querySelectorAll('.site-header nav a').map((a) => a.getAttribute('href'))
      expect(nav).toEqual(['/', '/gallery', '/dashboard', '/login'])
      for (const el of res.doc.querySelectorAll('script, link[rel="stylesheet"], link[rel="icon"], img')) {
        const src = el.getAttribute('src') ?? el.getAttribute('href') ?? el.getAttribute('data-preview')
        if (src) expect(src.startsWith('/') || src.startsWith(t.url)).toBe(true)
      }
      // No inline scripts or styles (the CSP forbids them).
      expect(res.doc.querySelectorAll('script:not([src])').length).toBe(0)
      expect(res.doc.querySelectorAll('style, [style]').length).toBe(0)
    }
  })
})

describe('assets', () => {
  test('scripts and styles are served gzipped to clients that accept it, plain to the others', async () => {
    const html = await (await t.fetch('/')).text()
    const css = /href="(\/assets\/site\.css\?v=\w+)"/.exec(html)![1]
    const plain = await t.fetch(css, { headers: { 'accept-encoding': 'identity' } })
    const plainText = await plain.text()
    expect(plain.headers.get('content-encoding')).toBeNull()
    expect(plain.headers.get('vary')).toBe('accept-encoding')
    const zipped = await fetch(t.url + css, {
      headers: { 'accept-encoding': 'gzip' },
      decompress: false,
    } as RequestInit)
    expect(zipped.headers.get('content-encoding')).toBe('gzip')
    const bytes = new Uint8Array(await zipped.arrayBuffer())
    expect(bytes.length).toBeLessThan(plainText.length / 2)
    expect(new TextDecoder().decode(Bun.gunzipSync(bytes))).toBe(plainText)
    expect(zipped.headers.get('etag')).not.toBe(plain.headers.get('etag'))
    expect(zipped.headers.get('cache-control')).toContain('immutable')
  })
})
