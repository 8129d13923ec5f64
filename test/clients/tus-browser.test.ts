import { afterAll, beforeAll, describe, expect, setDefaultTimeout, test } from 'bun:test'
import type { Browser, Page } from 'playwright-core'
import { launchBrowser, newIsolatedPage, type IsolatedPage } from '../browser'
import { makeNoisePng } from '../fixtures'
import { registerUser, startTestServer, type TestServer } from '../helpers'
import { fakeClassifier } from '../webupload/fake-classifier'

// src/web/assets/tus-upload.js in a real browser: chunks, progress, abort, resume from localStorage.
setDefaultTimeout(60_000)

const KB = 1024
let t: TestServer
let browser: Browser
let p: IsolatedPage
let page: Page
let png: Uint8Array<ArrayBuffer>

beforeAll(async () => {
  t = await startTestServer({ ANON_MAX_FILE_SIZE: String(2 * KB * KB) }, { classifier: fakeClassifier('neutral').classifier })
  browser = await launchBrowser()
  p = await newIsolatedPage(browser, t.url)
  page = p.page
  await page.goto(`${t.url}/`, { waitUntil: 'load' })
  await page.addScriptTag({ url: '/assets/tus-upload.js' })
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
    await Bun.sleep(200)
    const head = await fetch(url, { method: 'HEAD', headers: { 'tus-resumable': '1.0.0' } })
    const offset = Number(head.headers.get('upload-offset'))
    expect(offset).toBeGreaterThanOrEqual(512 * KB)
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
    expect(second.answer).toMatchObject({ success: true, size: png.length, width: 600, height: 600, visibility: 'private', nsfw: false, filename: 'noise.png' })
    expect(typeof second.answer.deleteToken).toBe('string')
    expect(await storedUploads()).toEqual([])
    const original = new Uint8Array(await (await fetch(second.answer.url)).arrayBuffer())
    expect(original).toEqual(png)
    expect(p.pageErrors).toEqual([])
  })

  test('a logged-in upload sends the bearer token; refusals reject with the status and the server message', async () => {
    const user = await registerUser(t)
    const answer = await page.evaluate(
      async (token) => (window as any).tusUpload((window as any).testFile, { headers: { Authorization: `Bearer ${token}` }, metadata: { album: 'Browser' } }),
      user.token,
    )
    expect(answer.size).toBe(png.length)
    const listed = await t.json('/api/images', { headers: user.bearer })
    expect(listed.body.images.map((i: { id: string }) => i.id)).toEqual([answer.id])

    const tooBig = await page.evaluate(async () => {
      try {
        await (window as any).tusUpload(new File([new Uint8Array(3 * 1024 * 1024)], 'big.png'))
        return null
      } catch (error) {
        return { status: (error as any).status, message: (error as Error).message }
      }
    })
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
