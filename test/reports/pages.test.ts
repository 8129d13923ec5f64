import { afterAll, beforeAll, describe, expect, test } from 'bun:test'
import { parse } from 'node-html-parser'
import type { Browser } from 'playwright-core'
import { launchBrowser, newIsolatedPage, screenshot } from '../browser'
import { makeImage, uploadForm } from '../fixtures'
import { jsonBody, makeAdmin, registerUser, startTestServer, type TestServer, userWithKey } from '../helpers'
import { fakeClassifier } from '../moderation/fake-classifier'

type Account = Awaited<ReturnType<typeof userWithKey>>

let t: TestServer
let admin: Awaited<ReturnType<typeof registerUser>>
let owner: Account
let browser: Browser

beforeAll(async () => {
  t = await startTestServer({}, { classifier: fakeClassifier('neutral').classifier, rescan: { intervalMs: 3_600_000 } })
  admin = await registerUser(t)
  await makeAdmin(t, admin.user.id)
  owner = await userWithKey(t)
  browser = await launchBrowser()
})
afterAll(async () => {
  await browser?.close()
  await t.stop()
})

let seed = 1
async function upload(name = 'photo.png') {
  const res = await t.json('/api/v1/upload', {
    method: 'POST',
    headers: owner.keyHeader,
    body: uploadForm([{ bytes: await makeImage('png', 120, 90, seed++), name }]),
  })
  if (res.status !== 201) throw new Error(`upload failed: ${res.status}`)
  return res.body as { id: string; url: string; viewer: string }
}

const adminReports = async (status = 'open') =>
  (await t.json(`/api/admin/reports?status=${status}&limit=100`, { headers: admin.bearer })).body.reports as {
    id: number
    imageId: string
    reason: string
    details: string | null
    status: string
  }[]

async function open(path: string, token?: string) {
  const p = await newIsolatedPage(browser, t.url)
  const problems: string[] = []
  p.page.on('console', (msg) => {
    if (msg.type() === 'error') problems.push(msg.text())
  })
  if (token) {
    await p.context.addInitScript((value: string) => localStorage.setItem('imghost.token', value), token)
  }
  await p.page.goto(t.url + path, { waitUntil: 'load' })
  return { ...p, problems }
}

describe('the viewer page', () => {
  test('carries a report form for its image, with every reason, and loads report.js', async () => {
    const up = await upload()
    const res = await t.fetch(`/i/${up.id}`)
    const doc = parse(await res.text())
    const form = doc.querySelector('form[data-report-image]')
    expect(form?.getAttribute('data-report-image')).toBe(up.id)
    expect(doc.querySelectorAll('#report-reason option').map((o) => o.getAttribute('value'))).toEqual([
      'illegal',
      'nsfw',
      'copyright',
      'spam',
      'other',
    ])
    expect(doc.querySelector('#report-details')?.getAttribute('maxlength')).toBe('1000')
    const script = doc.querySelectorAll('script').find((s) => s.getAttribute('src')?.startsWith('/assets/report.js'))
    expect(script).toBeDefined()
    expect((await t.fetch(script!.getAttribute('src')!)).status).toBe(200)
  })

  test('in a browser: the form sends the report and says so', async () => {
    const up = await upload('reported.png')
    const p = await open(`/i/${up.id}`)
    try {
      await p.page.click('.report-box summary')
      await p.page.selectOption('#report-reason', 'copyright')
      await p.page.fill('#report-details', 'This is my photo')
      await p.page.click('.report-form button[type="submit"]')
      await p.page.waitForSelector('[data-report-status]:not([hidden])')
      expect(await p.page.textContent('[data-report-status]')).toContain('Thank you')
      await screenshot(p.page, 'viewer-report-sent')
      const mine = (await adminReports()).filter((r) => r.imageId === up.id)
      expect(mine).toHaveLength(1)
      expect(mine[0]).toMatchObject({ reason: 'copyright', details: 'This is my photo' })
      expect(p.blocked).toEqual([])
      expect(p.pageErrors).toEqual([])
      expect(p.problems).toEqual([])
    } finally {
      await p.close()
    }
  })
})

describe('/admin/reports', () => {
  test('the page is a shell: noindex, no report data in the HTML', async () => {
    const up = await upload()
    await t.json('/api/reports', {
      method: 'POST',
      ...jsonBody({ imageId: up.id, reason: 'spam', details: 'secret-detail-text' }),
    })
    const res = await t.fetch('/admin/reports')
    expect(res.status).toBe(200)
    const text = await res.text()
    expect(text).toContain('<meta name="robots" content="noindex">')
    expect(text).toContain('/assets/admin-reports.js')
    expect(text).not.toContain('secret-detail-text')
  })

  test('without a session it asks to log in; a non-admin is told it is for admins', async () => {
    let p = await open('/admin/reports')
    try {
      expect(await p.page.isVisible('[data-reports-signed-out]')).toBe(true)
      expect(await p.page.isVisible('[data-reports-app]')).toBe(false)
    } finally {
      await p.close()
    }
    const someone = await registerUser(t)
    p = await open('/admin/reports', someone.token)
    try {
      await p.page.waitForSelector('[data-reports-signed-out]:not([hidden])')
      expect(await p.page.textContent('[data-reports-signed-out]')).toContain('Only administrators')
    } finally {
      await p.close()
    }
  })

  test('an admin sees open reports, dismisses one, and deletes an image with its owner banned', async () => {
    const keep = await upload('keep-me.png')
    const remove = await upload('remove-me.png')
    const bad = await userWithKey(t)
    const badUp = (
      await t.json('/api/v1/upload', {
        method: 'POST',
        headers: bad.keyHeader,
        body: uploadForm([{ bytes: await makeImage('png', 50, 40, seed++), name: 'bad.png' }]),
      })
    ).body
    for (const [imageId, reason] of [
      [keep.id, 'other'],
      [remove.id, 'illegal'],
      [badUp.id, 'spam'],
    ]) {
      expect((await t.json('/api/reports', { method: 'POST', ...jsonBody({ imageId, reason }) })).status).toBe(201)
    }
    const byImage = async (imageId: string, status = 'open') =>
      (await adminReports(status)).find((r) => r.imageId === imageId)

    const p = await open('/admin/reports', admin.token)
    p.page.on('dialog', (dialog) => dialog.accept())
    try {
      const item = (imageId: string) => p.page.locator('.report-item', { hasText: `Image ${imageId}` })
      await item(keep.id).waitFor()
      await screenshot(p.page, 'admin-reports')

      await item(keep.id).locator('[data-act="dismiss"]').click()
      await p.page.waitForFunction(() =>
        document.querySelector('[data-reports-message]')?.textContent?.includes('dismissed'),
      )
      expect(await item(keep.id).count()).toBe(0)
      expect((await byImage(keep.id, 'dismissed'))?.status).toBe('dismissed')
      expect((await t.fetch(new URL(keep.url).pathname)).status).toBe(200)

      await item(remove.id).locator('[data-act="delete"]').click()
      await p.page.waitForFunction(() =>
        document.querySelector('[data-reports-message]')?.textContent?.includes('deleted'),
      )
      expect((await t.fetch(new URL(remove.url).pathname)).status).toBe(404)
      expect((await byImage(remove.id, 'actioned'))?.status).toBe('actioned')
      expect((await t.json('/api/v1/me', { headers: owner.keyHeader })).status).toBe(200)

      await item(badUp.id).locator('[data-act="ban"]').click()
      await p.page.waitForFunction(() =>
        document.querySelector('[data-reports-message]')?.textContent?.includes('banned'),
      )
      expect((await t.json('/api/v1/me', { headers: bad.keyHeader })).status).toBe(403)

      await p.page.click('[data-status-filter="actioned"]')
      await item(badUp.id).waitFor()
      expect(await item(badUp.id).locator('[data-act]').count()).toBe(0)
      await screenshot(p.page, 'admin-reports-actioned')
      expect(p.blocked).toEqual([])
      expect(p.pageErrors).toEqual([])
      expect(p.problems).toEqual([])
    } finally {
      await p.close()
    }
  })
})
