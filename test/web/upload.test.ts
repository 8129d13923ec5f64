import { afterAll, beforeAll, describe, expect, setDefaultTimeout, test } from 'bun:test'
import type { Browser } from 'playwright-core'
import { launchBrowser } from '../browser'
import { makeImage, makeNoisePng } from '../fixtures'
import { expectClean, openPage, pngFile, shoot, startWebServer, tabUntil, type WebServer } from './support'

// A real browser and real uploads: more than the default 5 s on a slow machine.
setDefaultTimeout(60_000)

let t: WebServer
let browser: Browser

beforeAll(async () => {
  // Small anonymous limits so the page's own checks can be reached with small files; a roomy upload window.
  t = await startWebServer({
    ANON_MAX_FILES_PER_UPLOAD: '3',
    ANON_MAX_FILE_SIZE: String(200 * 1024),
    ANON_UPLOADS_PER_WINDOW: '100',
  })
  browser = await launchBrowser()
})
afterAll(async () => {
  await browser?.close()
  await t?.stop()
})

const doneItems = (p: { page: import('playwright-core').Page }, n: number) =>
  p.page.waitForFunction((count) => document.querySelectorAll('.upload-item[data-state="done"]').length >= count, n, {
    timeout: 20_000,
  })

describe('upload page', () => {
  test('"Delete after" gives the upload an expiry; the offered choices stay within MAX_EXPIRY', async () => {
    const p = await openPage(browser, t, '/')
    try {
      expect(await p.page.locator('#expires-select option').allTextContents()).toEqual([
        'Never',
        '1 hour',
        '1 day',
        '1 week',
        '30 days',
        '1 year',
      ])
      await p.page.selectOption('#expires-select', 'P1D')
      await p.page.setInputFiles('#file-input', await pngFile('brief.png'))
      const before = Date.now()
      await p.page.click('#upload-start')
      await doneItems(p, 1)
      const viewer = await p.page.locator('input[id$="-viewer"]').inputValue()
      const id = /\/i\/([A-Za-z0-9]{8})$/.exec(viewer)![1]
      const expiresAt = Date.parse((await t.json(`/api/v1/image/${id}`)).body.data.expiresAt)
      expect(expiresAt - before).toBeGreaterThanOrEqual(86_400_000 - 1000)
      expect(expiresAt - Date.now()).toBeLessThanOrEqual(86_400_000)
      expectClean(p)
    } finally {
      await p.close()
    }
    // A smaller bound leaves the longer choices out.
    const short = await startWebServer({ MAX_EXPIRY: '604800' })
    try {
      const html = await (await short.fetch('/')).text()
      expect([...html.matchAll(/<option value="(P[^"]*)"/g)].map((m) => m[1])).toEqual(['PT1H', 'P1D', 'P7D'])
    } finally {
      await short.stop()
    }
  })

  test('a TIFF upload: the direct link is the original, the embedding codes show its JPEG preset', async () => {
    const p = await openPage(browser, t, '/')
    try {
      const tiff = {
        name: 'scan.tiff',
        mimeType: 'image/tiff',
        buffer: Buffer.from(await makeImage('tiff', 90, 60, 5)),
      }
      await p.page.setInputFiles('#file-input', [tiff])
      await p.page.click('#upload-start')
      await doneItems(p, 1)
      const item = p.page.locator('.upload-item').first()
      const direct = await item.locator('input[id$="-direct"]').inputValue()
      const viewer = await item.locator('input[id$="-viewer"]').inputValue()
      const id = /\/i\/([A-Za-z0-9]{8})$/.exec(viewer)![1]
      expect(direct).toBe(`${t.url}/cdn/${id}.tiff`)
      const preset = `${t.url}/cdn/large/${id}.jpg`
      expect(await item.locator('input[id$="-bbcode"]').inputValue()).toBe(`[url=${viewer}][img]${preset}[/img][/url]`)
      expect(await item.locator('input[id$="-markdown"]').inputValue()).toBe(`[![scan.tiff](${preset})](${viewer})`)
      expect(await item.locator('input[id$="-html"]').inputValue()).toContain(`<img src="${preset}"`)
      expect((await t.fetch(new URL(preset).pathname)).headers.get('content-type')).toBe('image/jpeg')
      expectClean(p)
    } finally {
      await p.close()
    }
  })

  test('an anonymous visitor uploads two files with the file input and gets their links, with copy buttons', async () => {
    const p = await openPage(browser, t, '/')
    try {
      expect(await p.page.textContent('h1')).toBe('Upload images')
      expect(await p.page.textContent('#limits-text')).toContain('Up to 3 files at a time, 200 KB each')
      await shoot(p.page, 'upload-empty')

      await p.page.setInputFiles('#file-input', [
        await pngFile('first.png', 300, 200),
        await pngFile('second.png', 160, 120),
      ])
      expect(await p.page.locator('.upload-item[data-state="queued"]').count()).toBe(2)
      await p.page.click('#upload-start')
      await doneItems(p, 2)

      const items = p.page.locator('.upload-item')
      expect(await items.count()).toBe(2)
      for (let i = 0; i < 2; i++) {
        const item = items.nth(i)
        expect(await item.locator('progress').evaluate((el: HTMLProgressElement) => el.value)).toBe(100)
        const direct = await item.locator('input[id$="-direct"]').inputValue()
        const viewer = await item.locator('input[id$="-viewer"]').inputValue()
        const id = /\/i\/([A-Za-z0-9]{8})$/.exec(viewer)![1]
        expect(direct).toBe(`${t.url}/cdn/${id}.png`)
        expect(await item.locator('input[id$="-markdown"]').inputValue()).toMatch(
          new RegExp(
            `^\\[!\\[(first|second)\\.png\\]\\(${direct.replace(/[.]/g, '\\.')}\\)\\]\\(${viewer.replace(/[.]/g, '\\.')}\\)$`,
          ),
        )
        expect(await item.locator('input[id$="-bbcode"]').inputValue()).toBe(
          `[url=${viewer}][img]${direct}[/img][/url]`,
        )
        expect(await item.locator('input[id$="-html"]').inputValue()).toContain(`<img src="${direct}"`)
        // The links are real: the image is stored, public, anonymous.
        const details = await t.json(`/api/v1/image/${id}`)
        expect(details.status).toBe(200)
        expect(details.body.data).toMatchObject({ visibility: 'public', nsfw: false })
        expect((await t.fetch(new URL(direct).pathname)).status).toBe(200)
      }
      const names = await items.locator('.item-name').allTextContents()
      expect(names.sort()).toEqual(['first.png', 'second.png'])

      // Copy buttons copy the link next to them.
      const first = items.first()
      await first.locator('button[data-copy$="-direct"]').click()
      expect(await p.page.evaluate(() => navigator.clipboard.readText())).toBe(
        await first.locator('input[id$="-direct"]').inputValue(),
      )
      expect(await first.locator('button[data-copy$="-direct"]').textContent()).toBe('Copied!')
      // With two results, all direct links together.
      expect(await p.page.isVisible('#all-links')).toBe(true)
      expect((await p.page.inputValue('#all-links')).split('\n')).toHaveLength(2)
      expect(await p.page.textContent('#upload-status')).toBe('2 uploaded.')
      await shoot(p.page, 'upload-results')
      expectClean(p)
    } finally {
      await p.close()
    }
  })

  test('private and NSFW options apply; an anonymous upload can be deleted with its token', async () => {
    const p = await openPage(browser, t, '/')
    try {
      await p.page.check('input[name="visibility"][value="private"]')
      await p.page.check('#nsfw')
      await p.page.setInputFiles('#file-input', [await pngFile('secret.png')])
      await p.page.click('#upload-start')
      await doneItems(p, 1)
      const viewer = await p.page.inputValue('input[id$="-viewer"]')
      const id = viewer.split('/').pop()!
      expect((await t.json(`/api/v1/image/${id}`)).body.data).toMatchObject({ visibility: 'private', nsfw: true })
      // Its own thumbnail is blurred behind a Show button on the result too.
      expect(await p.page.locator('.result-thumb img').evaluate((el) => getComputedStyle(el).filter)).toContain('blur')
      await p.page.click('.result-thumb [data-reveal]')
      expect(await p.page.locator('.result-thumb img').evaluate((el) => getComputedStyle(el).filter)).toBe('none')

      p.page.once('dialog', (dialog) => dialog.accept())
      await p.page.click('text=Delete this image')
      await p.page.waitForSelector('.upload-item[data-state="deleted"]')
      expect((await t.json(`/api/v1/image/${id}`)).status).toBe(404)
      expectClean(p)
    } finally {
      await p.close()
    }
  })

  test('the delete link: shown with a hint to save it, and opened later it deletes the image', async () => {
    const p = await openPage(browser, t, '/')
    let deletePage: string
    let id: string
    try {
      await p.page.setInputFiles('#file-input', [await pngFile('later.png', 120, 90)])
      await p.page.click('#upload-start')
      await doneItems(p, 1)
      id = (await p.page.inputValue('input[id$="-viewer"]')).split('/').pop()!
      deletePage = await p.page.inputValue('input[id$="-delete"]')
      expect(deletePage).toStartWith(`${t.url}/delete/${id}/`)
      expect(await p.page.textContent('label[for$="-delete"]')).toBe('Delete link (keep it private)')
      expect(await p.page.textContent('.save-hint')).toContain('Save these links now')
      expectClean(p)
    } finally {
      await p.close()
    }

    // Another day, another tab: the link alone is enough.
    const later = await openPage(browser, t, new URL(deletePage).pathname)
    try {
      expect(await later.page.textContent('h1')).toBe('Delete this image?')
      expect(
        await later.page.locator('.delete-page img').evaluate((el: HTMLImageElement) => el.complete && el.naturalWidth),
      ).toBeGreaterThan(0)
      await shoot(later.page, 'delete-page')
      await Promise.all([
        later.page.waitForURL(`${t.url}/delete/${id}`),
        later.page.click('button:text("Delete this image")'),
      ])
      expect(await later.page.textContent('h1')).toBe('Image deleted')
      expect((await t.fetch(`/cdn/${id}.png`)).status).toBe(404)
      expect((await t.json(`/api/v1/image/${id}`)).status).toBe(404)
      // The link is spent: opened again, it says the image is gone.
      await later.page.goto(deletePage)
      expect(await later.page.textContent('h1')).toBe('Image not found')
      // The spent link is a 404 page, which the console reports.
      expectClean(later, [/status of 404/])
    } finally {
      await later.close()
    }
  })

  test("clear errors before sending: type, size and count; and the server's own refusals", async () => {
    const p = await openPage(browser, t, '/')
    try {
      const big = { name: 'big.png', mimeType: 'image/png', buffer: Buffer.from(await makeNoisePng(300)) }
      expect(big.buffer.length).toBeGreaterThan(200 * 1024)
      await p.page.setInputFiles('#file-input', [
        { name: 'notes.txt', mimeType: 'text/plain', buffer: Buffer.from('hello') },
        big,
        await pngFile('a.png'),
        await pngFile('b.png'),
        await pngFile('c.png'),
        await pngFile('d.png'),
      ])
      const messages = await p.page.locator('.upload-item .item-message').allTextContents()
      expect(messages[0]).toContain('Not a supported image type')
      expect(messages[1]).toMatch(/Too large: 2\d\d(\.\d)? KB, the limit is 200 KB per file/)
      expect(messages.slice(2, 5)).toEqual(['Ready to upload', 'Ready to upload', 'Ready to upload'])
      expect(messages[5]).toContain('Too many files: at most 3 at a time')
      expect(await p.page.textContent('#upload-status')).toContain('6 files added, 3 cannot be uploaded')
      await shoot(p.page, 'upload-errors')

      // Removing a refused file is possible; removing a queued one lets the file over the count back in.
      await p.page.click('.upload-item:nth-child(3) button:has-text("Remove")')
      const after = await p.page.locator('.upload-item .item-message').allTextContents()
      expect(after.slice(2)).toEqual(['Ready to upload', 'Ready to upload', 'Ready to upload'])

      // A file that looks like an image to the browser but is not: the server says so, and the page shows it.
      await p.page.click('#upload-clear')
      await p.page.setInputFiles('#file-input', [
        { name: 'fake.png', mimeType: 'image/png', buffer: Buffer.from('not really a png') },
      ])
      await p.page.click('#upload-start')
      await p.page.waitForSelector('.upload-item[data-state="failed"]')
      const failed = await p.page.textContent('.upload-item[data-state="failed"] .item-message')
      expect(failed).toMatch(/supported|image/i)
      expect(await p.page.isVisible('.upload-item[data-state="failed"] button:has-text("Retry")')).toBe(true)
      // The 400 is logged by Chromium as a failed load: expected here.
      expectClean(p, [/status of 400/])
    } finally {
      await p.close()
    }
  })

  test('drag and drop and paste from the clipboard add files to the queue', async () => {
    const p = await openPage(browser, t, '/')
    try {
      const dropped = await pngFile('dropped.png')
      const pasted = await pngFile('image.png')
      await p.page.evaluate(
        ([drop, paste]) => {
          const file = (f: { name: string; bytes: number[] }) =>
            new File([new Uint8Array(f.bytes)], f.name, { type: 'image/png' })
          const dt = new DataTransfer()
          dt.items.add(file(drop))
          const zone = document.getElementById('dropzone')!
          zone.dispatchEvent(new DragEvent('dragenter', { bubbles: true, dataTransfer: dt }))
          zone.dispatchEvent(new DragEvent('dragover', { bubbles: true, cancelable: true, dataTransfer: dt }))
          zone.dispatchEvent(new DragEvent('drop', { bubbles: true, cancelable: true, dataTransfer: dt }))
          const clip = new DataTransfer()
          clip.items.add(file(paste))
          document.body.dispatchEvent(
            new ClipboardEvent('paste', { bubbles: true, cancelable: true, clipboardData: clip }),
          )
        },
        [
          { name: dropped.name, bytes: [...dropped.buffer] },
          { name: pasted.name, bytes: [...pasted.buffer] },
        ],
      )
      const names = await p.page.locator('.upload-item .item-name').allTextContents()
      expect(names[0]).toBe('dropped.png')
      // A pasted screenshot gets a name worth keeping instead of image.png.
      expect(names[1]).toMatch(/^pasted-\d{8}-\d{6}\.png$/)
      expect(await p.page.evaluate(() => document.getElementById('dropzone')!.classList.contains('dragging'))).toBe(
        false,
      )
      await p.page.click('#upload-start')
      await doneItems(p, 2)
      expectClean(p)
    } finally {
      await p.close()
    }
  })

  test('keyboard: the file picker, the Upload button and every result link and copy button are reachable with Tab', async () => {
    const p = await openPage(browser, t, '/')
    try {
      const before = await tabUntil(p.page, (f) => f.id === 'upload-start')
      expect(before.at(-1)!.id).toBe('upload-start')
      // The header links and the (visually hidden) file input come first, in reading order.
      expect(before.map((f) => f.href)).toContain('/gallery')
      expect(before.map((f) => f.id)).toContain('file-input')
      const fileInput = before.findIndex((f) => f.id === 'file-input')
      expect(before.findIndex((f) => f.id === 'upload-start')).toBeGreaterThan(fileInput)
      // The focused file input shows a focus ring on its visible label.
      await p.page.focus('#file-input')
      expect(await p.page.locator('#file-label').evaluate((el) => getComputedStyle(el).outlineStyle)).toBe('solid')

      await p.page.setInputFiles('#file-input', [await pngFile('keyboard.png')])
      await p.page.focus('#upload-start')
      await p.page.keyboard.press('Enter')
      await doneItems(p, 1)
      await p.page.focus('#upload-start')
      const after = await tabUntil(p.page, (f) => f.text === 'Open the viewer page')
      const ids = after.map((f) => f.id)
      const copies = after.map((f) => f.copy).filter(Boolean)
      for (const key of ['direct', 'viewer', 'markdown', 'bbcode', 'html']) {
        expect(ids.some((id) => id.endsWith(`-${key}`))).toBe(true)
        expect(copies.some((c) => c!.endsWith(`-${key}`))).toBe(true)
      }
      expect(after.at(-1)!.text).toBe('Open the viewer page')
      // Enter on a focused copy button copies.
      await p.page.focus('button[data-copy$="-viewer"]')
      await p.page.keyboard.press('Enter')
      expect(await p.page.evaluate(() => navigator.clipboard.readText())).toBe(
        await p.page.inputValue('input[id$="-viewer"]'),
      )
      expectClean(p)
    } finally {
      await p.close()
    }
  })

  test('dark mode follows the system', async () => {
    const light = await openPage(browser, t, '/')
    const dark = await openPage(browser, t, '/', { dark: true })
    try {
      const bg = (page: typeof light.page) => page.evaluate(() => getComputedStyle(document.body).backgroundColor)
      expect(await bg(light.page)).not.toBe(await bg(dark.page))
      await shoot(dark.page, 'upload-dark')
      expectClean(dark)
    } finally {
      await light.close()
      await dark.close()
    }
  })
})

describe('upload page: rate limit', () => {
  let limited: WebServer
  beforeAll(async () => {
    limited = await startWebServer({ ANON_UPLOADS_PER_WINDOW: '1', ANON_WINDOW_SECONDS: '600' })
  })
  afterAll(() => limited?.stop())

  test('a 429 shows the wait time from Retry-After, on the file and in the status line', async () => {
    const p = await openPage(browser, limited, '/')
    try {
      expect(await p.page.textContent('#limits-text')).toContain('1 upload per 10 minutes')
      await p.page.setInputFiles('#file-input', [
        await pngFile('one.png'),
        await pngFile('two.png'),
        await pngFile('three.png'),
      ])
      await p.page.click('#upload-start')
      await p.page.waitForSelector('.upload-item[data-state="failed"]', { timeout: 20_000 })
      await p.page.waitForFunction(() => document.getElementById('upload-start')!.textContent === 'Upload')
      const states = await p.page
        .locator('.upload-item')
        .evaluateAll((els) => els.map((el) => el.getAttribute('data-state')))
      expect(states.filter((s) => s === 'done')).toHaveLength(1)
      expect(states.filter((s) => s === 'failed').length).toBeGreaterThanOrEqual(1)
      const message = await p.page.textContent('.upload-item[data-state="failed"] .item-message')
      expect(message).toMatch(/^Upload limit reached\. Try again in (9 min \d+ s|10 min)\.$/)
      const status = await p.page.textContent('#upload-status')
      expect(status).toMatch(/Try again in (9 min \d+ s|10 min)/)
      expect(await p.page.getAttribute('#upload-status', 'role')).toBe('status')
      await shoot(p.page, 'upload-429')
      expectClean(p, [/status of 429/])
    } finally {
      await p.close()
    }
  })
})
