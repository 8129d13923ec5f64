/** /admin/blocks in a browser: an admin sees the blocked pictures (the kept thumbnail too) and lifts one. */
import { afterAll, beforeAll, describe, expect, test } from 'bun:test'
import type { Browser } from 'playwright-core'
import { launchBrowser, newIsolatedPage, screenshot } from '../browser'
import { uploadForm } from '../fixtures'
import { jsonBody, makeAdmin, registerUser, startTestServer, type TestServer, userWithKey } from '../helpers'
import { picture } from './pictures'

let t: TestServer
let browser: Browser
let admin: Awaited<ReturnType<typeof registerUser>>

beforeAll(async () => {
  t = await startTestServer()
  admin = await registerUser(t)
  await makeAdmin(t, admin.user.id)
  browser = await launchBrowser()
})
afterAll(async () => {
  await browser?.close()
  await t.stop()
})

async function blockedUpload(seed: number, keepThumbnail: boolean) {
  const owner = await userWithKey(t)
  const bytes = await picture(seed)
  const up = await t.json('/api/v1/upload', {
    method: 'POST',
    headers: owner.keyHeader,
    body: uploadForm([{ bytes, name: `evil<b>${seed}.jpg` }]),
  })
  const res = await t.json(`/api/admin/images/${up.body.id}/block`, {
    method: 'POST',
    ...jsonBody({ reason: `<img src=x onerror=alert(${seed})>`, keepThumbnail }, admin.bearer),
  })
  expect(res.status).toBe(200)
  return { block: res.body.block as { id: number; phash: string }, bytes, owner }
}

describe('/admin/blocks', () => {
  test('the page is a shell (noindex, no block in the HTML); an admin sees blocks, a kept thumbnail, and lifts one', async () => {
    const kept = await blockedUpload(6000, true)
    const other = await blockedUpload(6001, false)
    const html = await (await t.fetch('/admin/blocks')).text()
    expect(html).toContain('<meta name="robots" content="noindex">')
    expect(html).not.toContain(kept.block.phash)

    const p = await newIsolatedPage(browser, t.url)
    await p.context.addInitScript((value: string) => localStorage.setItem('imghost.token', value), admin.token)
    p.page.on('dialog', (dialog) => dialog.accept())
    try {
      await p.page.goto(`${t.url}/admin/blocks`, { waitUntil: 'load' })
      const item = (id: number) => p.page.locator(`[data-block-id="${id}"]`)
      await item(kept.block.id).waitFor()
      // The reason is shown as text, never as markup.
      expect(await item(kept.block.id).locator('h2').textContent()).toContain('<img src=x onerror=alert(6000)>')
      await p.page.waitForFunction(
        (id) =>
          document.querySelector(`[data-block-id="${id}"] img`)?.getAttribute('src')?.startsWith('data:image/webp'),
        kept.block.id,
      )
      expect(await item(other.block.id).textContent()).toContain('No thumbnail kept')
      await screenshot(p.page, 'admin-blocks')

      await item(other.block.id).locator('[data-lift]').click()
      await p.page.waitForFunction(() =>
        document.querySelector('[data-blocks-message]')?.textContent?.includes('lifted'),
      )
      expect(await item(other.block.id).count()).toBe(0)
      const again = await t.json('/api/v1/upload', {
        method: 'POST',
        headers: other.owner.keyHeader,
        body: uploadForm([{ bytes: other.bytes, name: 'again.jpg' }]),
      })
      expect(again.status).toBe(201)
      expect(p.blocked).toEqual([])
      expect(p.pageErrors).toEqual([])
    } finally {
      await p.close()
    }
  })
})
