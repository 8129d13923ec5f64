import { afterAll, beforeAll, describe, expect, setDefaultTimeout, test } from 'bun:test'
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import type { Browser, Page, Request } from 'playwright-core'
import { TUS_THRESHOLD } from '../../src/modules/pages/upload'
import { type IsolatedPage, launchBrowser, newIsolatedPage } from '../browser'
import { makeNoisePng } from '../fixtures'
import { eventually, registerUser } from '../helpers'
import { expectClean, openPage, pngFile, shoot, startWebServer, type WebPage, type WebServer } from '../web/support'

// src/web/assets/tus-upload.js in a real browser: chunks, progress, abort, resume from localStorage; and the upload page
// sending its large files through it.
setDefaultTimeout(60_000)

const KB = 1024
const MB = KB * KB
/** Room for a file over the upload page's tus threshold, and no more. */
const ANON_MAX = TUS_THRESHOLD + 8 * MB
let t: WebServer
let browser: Browser
let p: IsolatedPage
let page: Page
let png: Uint8Array<ArrayBuffer>
let dir: string

beforeAll(async () => {
  t = await startWebServer({ ANON_MAX_FILE_SIZE: String(ANON_MAX) })
  dir = mkdtempSync(join(tmpdir(), 'imghost-tus-page-'))
  browser = await launchBrowser()
  p = await newIsolatedPage(browser, t.url)
  page = p.page
  // The upload page loads tus-upload.js itself.
  await page.goto(`${t.url}/`, { waitUntil: 'load' })
  png = await makeNoisePng(600) // about 1 MB
  await page.evaluate((b64) => {
    const bytes = Uint8Array.from(atob(b64), (c) => c.charCodeAt(0))
    ;(window as any).testFile = new File([bytes], 'noise.png', { type: 'image/png', lastModified: 1_700_000_000_000 })
  }, Buffer.from(png).toString('base64'))
})
afterAll(async () => {
  await p?.close()
  await browser?.close()
  await t?.stop()
  if (dir) rmSync(dir, { recursive: true, force: true })
})

const storedUploads = () => page.evaluate(() => Object.keys(localStorage).filter((k) => k.startsWith('tus-upload:')))

describe('tus-upload.js', () => {
  test('uploads in chunks with progress; an aborted upload resumes where the server stopped', async () => {
    expect(await page.evaluate(() => typeof (window as any).tusUpload)).toBe('function')
    const first = await page.evaluate(async () => {
      const controller = new AbortController()
      const progress: number[] = []
      try {
        await (window as any).tusUpload((window as any).testFile, {
          chunkSize: 256 * 1024,
          metadata: { visibility: 'private' },
          signal: controller.signal,
          onProgress: (sent: number) => {
            progress.push(sent)
            if (sent >= 600 * 1024) controller.abort()
          },
        })
        return { outcome: 'finished', progress }
      } catch (error) {
        return { outcome: (error as Error).name, progress }
      }
    })
    expect(first.outcome).toBe('AbortError')
    expect(first.progress.length).toBeGreaterThan(2)
    const stored = await storedUploads()
    expect(stored).toHaveLength(1)
    const { url } = JSON.parse((await page.evaluate((k) => localStorage.getItem(k), stored[0]))!)
    // Once the server has seen the aborted PATCH end, it answers with what it kept.
    const offsetNow = async () =>
      Number((await fetch(url, { method: 'HEAD', headers: { 'tus-resumable': '1.0.0' } })).headers.get('upload-offset'))
    await eventually(async () => (await offsetNow()) >= 512 * KB, undefined, 'the aborted PATCH to end')
    const offset = await offsetNow()
    expect(offset).toBeLessThan(png.length)

    const second = await page.evaluate(async () => {
      const progress: number[] = []
      const answer = await (window as any).tusUpload((window as any).testFile, {
        chunkSize: 256 * 1024,
        metadata: { visibility: 'private' },
        onProgress: (sent: number, total: number) => progress.push(sent / total),
      })
      return { answer, progress }
    })
    expect(second.progress[0]).toBeGreaterThanOrEqual(offset / png.length)
    expect(second.progress.at(-1)).toBe(1)
    expect(second.answer).toMatchObject({
      success: true,
      size: png.length,
      width: 600,
      height: 600,
      visibility: 'private',
      nsfw: false,
      filename: 'noise.png',
    })
    expect(typeof second.answer.deleteToken).toBe('string')
    expect(await storedUploads()).toEqual([])
    const original = new Uint8Array(await (await fetch(second.answer.url)).arrayBuffer())
    expect(original).toEqual(png)
    expect(p.pageErrors).toEqual([])
  })

  test('a logged-in upload sends the bearer token; refusals reject with the status and the server message', async () => {
    const user = await registerUser(t)
    const answer = await page.evaluate(
      async (token) =>
        (window as any).tusUpload((window as any).testFile, {
          headers: { Authorization: `Bearer ${token}` },
          metadata: { album: 'Browser' },
        }),
      user.token,
    )
    expect(answer.size).toBe(png.length)
    const listed = await t.json('/api/images', { headers: user.bearer })
    expect(listed.body.images.map((i: { id: string }) => i.id)).toEqual([answer.id])

    const tooBig = await page.evaluate(async (max) => {
      try {
        await (window as any).tusUpload(new File([new Uint8Array(max + 1)], 'big.png'))
        return null
      } catch (error) {
        return { status: (error as any).status, message: (error as Error).message }
      }
    }, ANON_MAX)
    expect(tooBig?.status).toBe(413)
    expect(tooBig?.message).toContain('too large')

    const notImage = await page.evaluate(async () => {
      try {
        await (window as any).tusUpload(new File([new TextEncoder().encode('plain text, not a picture')], 'notes.png'))
        return null
      } catch (error) {
        return { status: (error as any).status, message: (error as Error).message }
      }
    })
    expect(notImage?.status).toBe(400)
    expect(await storedUploads()).toEqual([])
  })
})

/** The API requests the page sends, as "METHOD /path" with the tus Upload-Offset when there is one. */
function recordApi(page: Page) {
  const sent: { call: string; offset: number | null }[] = []
  page.on('request', (r: Request) => {
    const url = new URL(r.url())
    if (!url.pathname.startsWith('/api/')) return
    const offset = r.headers()['upload-offset']
    sent.push({
      call: `${r.method()} ${url.pathname.replace(/\/api\/tus\/\w+$/, '/api/tus/:id')}`,
      offset: offset === undefined ? null : Number(offset),
    })
  })
  return sent
}

const count = (sent: { call: string }[], call: string) => sent.filter((r) => r.call === call).length

async function doneOrFailed(w: WebPage) {
  await w.page.waitForSelector('.upload-item:is([data-state="done"], [data-state="failed"])', { timeout: 60_000 })
  return w.page.getAttribute('.upload-item', 'data-state')
}

/** The item's direct link serves exactly the uploaded bytes; returns the image id. */
async function expectSameBytes(w: WebPage, bytes: Uint8Array<ArrayBuffer>) {
  const direct = await w.page.inputValue('.upload-item input[id$="-direct"]')
  const id = /\/cdn\/([A-Za-z0-9]{8})\.png$/.exec(direct)![1]
  expect(new Uint8Array(await (await fetch(direct)).arrayBuffer())).toEqual(bytes)
  return id
}

describe('upload page: large files go through tus', () => {
  // A noise PNG (noise does not compress) just over the threshold, as a file for the file input.
  const big = { path: '', bytes: new Uint8Array(), side: Math.ceil(Math.sqrt(TUS_THRESHOLD / 3)) + 20 }
  beforeAll(async () => {
    big.bytes = await makeNoisePng(big.side)
    expect(big.bytes.length).toBeGreaterThan(TUS_THRESHOLD)
    expect(big.bytes.length).toBeLessThan(ANON_MAX)
    big.path = join(dir, 'big.png')
    writeFileSync(big.path, big.bytes)
  })

  test('a file over the threshold is sent in PATCH chunks to /api/tus, with progress, options and the links', async () => {
    const w = await openPage(browser, t, '/')
    try {
      expect(Number(await w.page.getAttribute('#upload', 'data-tus-threshold'))).toBe(TUS_THRESHOLD)
      const sent = recordApi(w.page)
      await w.page.check('input[name="visibility"][value="private"]')
      await w.page.check('#nsfw')
      await w.page.setInputFiles('#file-input', big.path)
      // Every value the progress bar takes on the way.
      await w.page.evaluate(() => {
        const bar = document.querySelector('.upload-item progress') as HTMLProgressElement
        const seen: number[] = []
        ;(window as any).progressSeen = seen
        new MutationObserver(() => seen.push(bar.value)).observe(bar, { attributes: true, attributeFilter: ['value'] })
      })
      await w.page.click('#upload-start')
      expect(await doneOrFailed(w)).toBe('done')

      expect(count(sent, 'POST /api/tus')).toBe(1)
      expect(count(sent, 'PATCH /api/tus/:id')).toBe(Math.ceil(big.bytes.length / (5 * MB)))
      expect(count(sent, 'POST /api/upload')).toBe(0)
      const seen: number[] = await w.page.evaluate(() => (window as any).progressSeen)
      expect(seen.some((v) => v > 0 && v < 100)).toBe(true)
      expect(seen).toEqual([...seen].sort((a, b) => a - b))
      expect(seen.at(-1)).toBe(100)
      expect(await w.page.textContent('.upload-item .item-message')).toStartWith(
        `Uploaded · ${big.side}×${big.side} · `,
      )

      const id = await expectSameBytes(w, big.bytes)
      expect(await w.page.inputValue('.upload-item input[id$="-viewer"]')).toBe(`${t.url}/i/${id}`)
      expect((await t.json(`/api/v1/image/${id}`)).body.data).toMatchObject({
        visibility: 'private',
        nsfw: true,
        size: big.bytes.length,
        width: big.side,
      })
      // The anonymous upload's delete token came back too: the page can delete it.
      expect(await w.page.isVisible('.upload-item button:has-text("Delete this image")')).toBe(true)
      await shoot(w.page, 'upload-tus')
      expectClean(w)
    } finally {
      await w.close()
    }
  })

  test('logged in, into an album: the connection drops mid-upload and the upload resumes by itself', async () => {
    const user = await registerUser(t)
    const album = await t.json('/api/albums', {
      method: 'POST',
      headers: { ...user.bearer, 'content-type': 'application/json' },
      body: JSON.stringify({ title: 'Large' }),
    })
    expect(album.status).toBe(201)
    const w = await openPage(browser, t, '/', { token: user.token })
    try {
      await w.page.waitForSelector('#album-option:not([hidden])')
      await w.page.selectOption('#album-select', album.body.album.id)
      const sent = recordApi(w.page)
      await w.page.setInputFiles('#file-input', big.path)
      // Offline once the first chunk is stored, online again once a request has failed.
      const firstChunk = w.page.waitForEvent('requestfinished', {
        predicate: (r) => r.method() === 'PATCH',
        timeout: 20_000,
      })
      await w.page.click('#upload-start')
      await firstChunk
      await w.context.setOffline(true)
      await w.page.waitForEvent('requestfailed', {
        predicate: (r) => new URL(r.url()).pathname.startsWith('/api/tus/'),
        timeout: 20_000,
      })
      await w.context.setOffline(false)
      expect(await doneOrFailed(w)).toBe('done')

      // One upload, resumed (HEAD for the offset), never restarted; and no multipart.
      expect(count(sent, 'POST /api/tus')).toBe(1)
      expect(count(sent, 'HEAD /api/tus/:id')).toBeGreaterThan(0)
      expect(count(sent, 'POST /api/upload')).toBe(0)
      // After the outage, the chunks go on from what the server had, not from the start.
      const head = sent.findIndex((r) => r.call === 'HEAD /api/tus/:id')
      expect(sent[head + 1].call).toBe('PATCH /api/tus/:id')
      expect(sent[head + 1].offset).toBeGreaterThanOrEqual(5 * MB)
      const offsets = sent.filter((r) => r.call === 'PATCH /api/tus/:id').map((r) => r.offset!)
      expect(offsets).toEqual([...offsets].sort((a, b) => a - b))

      const id = await expectSameBytes(w, big.bytes)
      const mine = await t.json('/api/images', { headers: user.bearer })
      expect(mine.body.images.map((i: { id: string }) => i.id)).toEqual([id])
      const inAlbum = await t.json(`/api/albums/${album.body.album.id}`, { headers: user.bearer })
      expect(inAlbum.body.images.map((i: { id: string }) => i.id)).toEqual([id])
      // The request lost in the outage is logged by Chromium.
      expectClean(w, [/ERR_INTERNET_DISCONNECTED/])
    } finally {
      await w.close()
    }
  })
})

describe('upload page: tus refusals', () => {
  let limited: WebServer
  beforeAll(async () => {
    limited = await startWebServer({
      ANON_MAX_FILE_SIZE: String(ANON_MAX),
      ANON_UPLOADS_PER_WINDOW: '1',
      ANON_WINDOW_SECONDS: '600',
    })
  })
  afterAll(() => limited?.stop())

  test('a 429 at the creation shows the wait time on the file and in the status line, and no chunk is sent', async () => {
    const w = await openPage(browser, limited, '/')
    try {
      // The window's one upload (multipart: a small file), then the large one.
      await w.page.setInputFiles('#file-input', [await pngFile('small.png')])
      await w.page.click('#upload-start')
      await w.page.waitForSelector('.upload-item[data-state="done"]')
      await w.page.click('#upload-clear')
      const sent = recordApi(w.page)
      // Refused before any data: the bytes need not be an image.
      writeFileSync(join(dir, 'large.png'), new Uint8Array(TUS_THRESHOLD + 1))
      await w.page.setInputFiles('#file-input', join(dir, 'large.png'))
      await w.page.click('#upload-start')
      expect(await doneOrFailed(w)).toBe('failed')
      const message = await w.page.textContent('.upload-item .item-message')
      expect(message).toMatch(/^Upload limit reached\. Try again in (9 min \d+ s|10 min)\.$/)
      expect(await w.page.textContent('#upload-status')).toBe(message)
      expect(sent.map((r) => r.call)).toEqual(['POST /api/tus'])
      expectClean(w, [/status of 429/])
    } finally {
      await w.close()
    }
  })
})
