import { afterAll, beforeAll, describe, expect, test } from 'bun:test'
import type { Browser } from 'playwright-core'
import { type IsolatedPage, launchBrowser, newIsolatedPage, screenshot } from '../browser'
import { type TestServer, userWithKey } from '../helpers'
import { send, startServer, uploadImage } from './support'

let t: TestServer
let browser: Browser
let owner: Awaited<ReturnType<typeof userWithKey>>

beforeAll(async () => {
  t = await startServer({ SITE_NAME: 'Pixbin' })
  owner = await userWithKey(t)
  browser = await launchBrowser()
})
afterAll(async () => {
  await browser?.close()
  await t.stop()
})

/** A page that records CSP violations and console errors next to the isolation helper's own checks. */
async function open(path: string, opts: { dark?: boolean } = {}) {
  const isolated = await newIsolatedPage(browser, t.url)
  const problems: string[] = []
  isolated.page.on('console', (msg) => {
    if (msg.type() === 'error') problems.push(msg.text())
  })
  if (opts.dark) await isolated.page.emulateMedia({ colorScheme: 'dark' })
  await isolated.context.grantPermissions(['clipboard-read', 'clipboard-write'], { origin: t.url })
  await isolated.page.goto(t.url + path, { waitUntil: 'load' })
  return { ...isolated, problems }
}

function expectClean(p: IsolatedPage & { problems: string[] }) {
  expect(p.blocked).toEqual([])
  expect(p.pageErrors).toEqual([])
  expect(p.problems).toEqual([])
}

describe('pages in a real browser', () => {
  test('viewer page: the image shows, copy buttons copy, no CSP violation, nothing from another host', async () => {
    const image = await uploadImage(t, owner.keyHeader, {}, { name: 'browser.png', width: 300, height: 200 })
    const p = await open(`/i/${image.id}`)
    try {
      const img = p.page.locator('figure.viewer img')
      expect(await img.evaluate((el: HTMLImageElement) => el.complete && el.naturalWidth)).toBe(300)
      await p.page.click('button[data-copy="code-direct"]')
      expect(await p.page.evaluate(() => navigator.clipboard.readText())).toBe(image.url)
      expect(await p.page.textContent('button[data-copy="code-direct"]')).toBe('Copied!')
      await p.page.click('button[data-copy="code-markdown"]')
      expect(await p.page.evaluate(() => navigator.clipboard.readText())).toBe(
        `[![browser.png](${image.url})](${image.viewer})`,
      )
      await screenshot(p.page, 'viewer-light')
      expectClean(p)
    } finally {
      await p.close()
    }
  })

  test('viewer page in dark mode uses the dark palette', async () => {
    const image = await uploadImage(t, owner.keyHeader)
    const light = await open(`/i/${image.id}`)
    const dark = await open(`/i/${image.id}`, { dark: true })
    try {
      const bg = (page: typeof light.page) => page.evaluate(() => getComputedStyle(document.body).backgroundColor)
      expect(await bg(light.page)).not.toBe(await bg(dark.page))
      await screenshot(dark.page, 'viewer-dark')
      expectClean(dark)
    } finally {
      await light.close()
      await dark.close()
    }
  })

  test('NSFW: blurred behind the warning until the reveal button is pressed', async () => {
    const image = await uploadImage(t, owner.keyHeader, { nsfw: 'true' })
    const p = await open(`/i/${image.id}`)
    try {
      const img = p.page.locator('figure.nsfw img')
      await p.page.waitForFunction(() => (document.querySelector('figure.nsfw img') as HTMLImageElement).complete)
      expect(await img.getAttribute('src')).toBe(image.thumbnail)
      expect(await img.evaluate((el) => getComputedStyle(el).filter)).toContain('blur')
      expect(await p.page.isVisible('.nsfw-warning')).toBe(true)
      await screenshot(p.page, 'viewer-nsfw-hidden')
      await p.page.click('button[data-reveal]')
      expect(await img.getAttribute('src')).toBe(image.url)
      expect(await img.evaluate((el) => getComputedStyle(el).filter)).toBe('none')
      expect(await p.page.isVisible('.nsfw-warning')).toBe(false)
      expectClean(p)
    } finally {
      await p.close()
    }
  })

  test('album page: the password form opens the album; thumbnails link to viewer pages', async () => {
    const album = (await t.json('/api/albums', send('POST', { title: 'Browser album', isPublic: true }, owner.bearer)))
      .body.album
    await t.json(`/api/albums/${album.id}`, send('PUT', { password: 'let me in' }, owner.bearer))
    const images = [await uploadImage(t, owner.keyHeader), await uploadImage(t, owner.keyHeader, { nsfw: 'true' })]
    for (const image of images)
      await t.json(`/api/albums/${album.id}/images`, send('POST', { imageId: image.id }, owner.bearer))

    const p = await open(`/a/${album.id}`)
    try {
      await p.page.fill('#album-password', 'wrong')
      await Promise.all([p.page.waitForNavigation(), p.page.click('form.password-form button[type="submit"]')])
      expect(await p.page.isVisible('.password-form .error')).toBe(true)
      // The wrong password page is a 403, which Chromium logs as a failed load; that one is expected.
      expect(p.problems).toEqual(['Failed to load resource: the server responded with a status of 403 (Forbidden)'])
      p.problems.length = 0
      await p.page.fill('#album-password', 'let me in')
      await Promise.all([p.page.waitForNavigation(), p.page.click('form.password-form button[type="submit"]')])
      expect(await p.page.textContent('h1')).toBe('Browser album')
      expect(await p.page.locator('.grid a.thumb').count()).toBe(2)
      await p.page.waitForFunction(() =>
        [...document.querySelectorAll('.grid img')].every((i) => (i as HTMLImageElement).complete),
      )
      expect(await p.page.locator('.grid a.nsfw-thumb img').evaluate((el) => getComputedStyle(el).filter)).toContain(
        'blur',
      )
      await screenshot(p.page, 'album')
      await Promise.all([p.page.waitForNavigation(), p.page.click('.grid a.thumb:not(.nsfw-thumb)')])
      expect(p.page.url()).toBe(images[0].viewer)
      expectClean(p)
    } finally {
      await p.close()
    }
  })
})
