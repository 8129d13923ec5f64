import { afterAll, beforeAll, describe, expect, test } from 'bun:test'
import type { Browser } from 'playwright-core'
import { launchBrowser, newIsolatedPage, screenshot } from '../browser'
import { makeAnimatedGif, makeImage } from '../fixtures'
import { type TestServer, userWithKey } from '../helpers'
import { startServer, uploadImage } from './support'

let t: TestServer
let browser: Browser
let owner: Awaited<ReturnType<typeof userWithKey>>

beforeAll(async () => {
  t = await startServer()
  owner = await userWithKey(t)
  browser = await launchBrowser()
})
afterAll(async () => {
  await browser?.close()
  await t.stop()
})

/** Opens a page (1280x900, device pixel ratio 1) and waits until every image in `selector` has loaded or failed. */
async function open(path: string, selector: string) {
  const p = await newIsolatedPage(browser, t.url)
  const problems: string[] = []
  p.page.on('console', (msg) => {
    if (msg.type() === 'error') problems.push(msg.text())
  })
  await p.page.goto(t.url + path, { waitUntil: 'load' })
  await p.page.waitForFunction(
    (sel) => [...document.querySelectorAll(sel)].every((img) => (img as HTMLImageElement).complete),
    selector,
  )
  const images = await p.page.$$eval(selector, (els) =>
    els.map((el) => {
      const img = el as HTMLImageElement
      return { currentSrc: img.currentSrc, naturalWidth: img.naturalWidth, shownWidth: img.clientWidth }
    }),
  )
  return { ...p, problems, images }
}

describe('<picture> in a real browser (Chromium)', () => {
  test('viewer: the AVIF source is chosen, at the preset that fits the shown width, and it loads', async () => {
    const image = await uploadImage(t, owner.keyHeader, {}, { bytes: await makeImage('png', 2000, 1000, 1) })
    const p = await open(`/i/${image.id}`, 'figure.viewer img')
    try {
      const [img] = p.images
      // The image is shown about 1040 px wide on this 1280 px window: the 1280 px preset, in the first type listed.
      expect(img.currentSrc).toBe(`${t.url}/cdn/large/${image.id}.avif`)
      // (naturalWidth is in CSS pixels: the file's width over the density its srcset entry gives it.)
      expect(img.naturalWidth).toBeGreaterThan(0)
      expect(img.shownWidth).toBeGreaterThan(0)
      await screenshot(p.page, 'viewer-picture')
      expect(p.blocked).toEqual([])
      expect(p.pageErrors).toEqual([])
      expect(p.problems).toEqual([])
    } finally {
      await p.close()
    }
  })

  test('viewer: an image narrower than the page is shown at its own width, not enlarged by its srcset', async () => {
    const image = await uploadImage(t, owner.keyHeader, {}, { bytes: await makeImage('jpeg', 400, 300, 3) })
    const p = await open(`/i/${image.id}`, 'figure.viewer img')
    try {
      const [img] = p.images
      expect(img.currentSrc).toBe(`${t.url}/cdn/medium/${image.id}.avif`)
      expect(img.shownWidth).toBe(400)
      expect(img.naturalWidth).toBe(400)
    } finally {
      await p.close()
    }
  })

  test('gallery: every tile loads from a preset source (AVIF, WebP for an animation), the small one at this size', async () => {
    const still = await uploadImage(t, owner.keyHeader, {}, { bytes: await makeImage('jpeg', 900, 600, 2) })
    const gif = await uploadImage(t, owner.keyHeader, {}, { bytes: await makeAnimatedGif(300, 200, 3), name: 'a.gif' })
    const p = await open('/gallery', '.grid img')
    try {
      const byId = (id: string) => p.images.find((img) => img.currentSrc.includes(id))!
      // A tile is at most 260 px wide here: the 320 px preset.
      expect(byId(still.id).currentSrc).toBe(`${t.url}/cdn/small/${still.id}.avif`)
      expect(byId(gif.id).currentSrc).toBe(`${t.url}/cdn/small/${gif.id}.webp`)
      for (const img of p.images) {
        expect(img.currentSrc).toMatch(/\.(avif|webp)$/)
        expect(img.naturalWidth).toBeGreaterThan(0)
        expect(img.shownWidth).toBeGreaterThan(0)
      }
      await screenshot(p.page, 'gallery-picture')
      expect(p.blocked).toEqual([])
      expect(p.problems).toEqual([])
    } finally {
      await p.close()
    }
  })
})
