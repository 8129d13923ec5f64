import { afterAll, beforeAll, describe, expect, test } from 'bun:test'
import { existsSync, statSync } from 'node:fs'
import AxeBuilder from '@axe-core/playwright'
import type { Browser, Page } from 'playwright-core'
import { launchBrowser, newIsolatedPage, screenshot } from '../browser'
import { startTestServer, type TestServer } from '../helpers'

let t: TestServer
let browser: Browser
beforeAll(async () => {
  t = await startTestServer()
  browser = await launchBrowser()
})
afterAll(async () => {
  await browser?.close()
  await t?.stop()
})

describe('Swagger UI at /swagger', () => {
  test('renders the operations with no internet access', async () => {
    const { page, blocked, pageErrors, close } = await newIsolatedPage(browser, t.url)
    try {
      const failed: string[] = []
      page.on('requestfailed', (request) => failed.push(`${request.url()} ${request.failure()?.errorText ?? ''}`))
      const res = await page.goto(`${t.url}/swagger`, { waitUntil: 'load' })
      expect(res?.status()).toBe(200)
      await page.waitForSelector('.opblock', { timeout: 20_000 })
      await page.getByText('/api/auth/register', { exact: false }).first().waitFor({ timeout: 20_000 })

      const operations = await page.locator('.opblock').count()
      expect(operations).toBeGreaterThan(15)
      const text = await page.locator('#swagger-ui').textContent()
      for (const path of ['/api/auth/login', '/api/v1/upload', '/api/keys', '/healthz']) expect(text).toContain(path)
      // The authorize button appears because the document declares security schemes.
      expect(await page.locator('.btn.authorize').count()).toBeGreaterThan(0)

      const file = await screenshot(page, 'swagger-ui')
      expect(existsSync(file) && statSync(file).size > 1000).toBe(true)

      expect(blocked).toEqual([])
      expect(failed).toEqual([])
      expect(pageErrors).toEqual([])
    } finally {
      await close()
    }
  })

  test('the isolation itself works: a request to another host is aborted and recorded', async () => {
    const { page, blocked, close } = await newIsolatedPage(browser, t.url)
    try {
      await page.goto(`${t.url}/healthz`)
      const outcome = await page.evaluate(() =>
        fetch('https://example.com/probe').then(
          () => 'reached',
          () => 'refused',
        ),
      )
      expect(outcome).toBe('refused')
      expect(blocked).toEqual(['https://example.com/probe'])
    } finally {
      await close()
    }
  })

  test('axe finds nothing serious or critical, light or dark: the list, open operations, the authorize dialog', async () => {
    const serious = async (page: Page, state: string) =>
      (await new AxeBuilder({ page }).analyze()).violations
        .filter((v) => v.impact === 'serious' || v.impact === 'critical')
        .flatMap((v) => v.nodes.map((n) => `${state}: ${v.id} ${n.target.join(' ')}`))
    const found: string[] = []
    for (const scheme of ['light', 'dark'] as const) {
      const { page, close } = await newIsolatedPage(browser, t.url)
      try {
        await page.emulateMedia({ colorScheme: scheme })
        await page.goto(`${t.url}/swagger`)
        await page.waitForSelector('.opblock', { timeout: 20_000 })
        // Named by the page's own script once the UI renders it.
        await page.waitForSelector('#servers[aria-label]')
        // Two operations open: the list's own elements stay, so one run covers both states (axe takes ~10 s a run).
        await page.locator('#operations-Images-postApiV1Upload .opblock-summary-control').click()
        await page.locator('#operations-Gallery-getApiGallery .opblock-summary-control').click()
        await page.waitForSelector('#operations-Gallery-getApiGallery .parameters')
        found.push(...(await serious(page, `${scheme}, the list with operations open`)))
        await page.locator('.btn.authorize').first().click()
        await page.waitForSelector('.modal-ux .close-modal[aria-label]')
        found.push(...(await serious(page, `${scheme}, the authorize dialog`)))
      } finally {
        await close()
      }
    }
    expect(found).toEqual([])
  }, 240_000)

  test('opens on the uploads: the first tag is Images, its first operation POST /api/v1/upload', async () => {
    const { page, close } = await newIsolatedPage(browser, t.url)
    try {
      await page.goto(`${t.url}/swagger`)
      await page.waitForSelector('.opblock', { timeout: 20_000 })
      expect(await page.locator('.opblock-tag').first().getAttribute('data-tag')).toBe('Images')
      expect(await page.locator('.opblock').first().getAttribute('id')).toBe('operations-Images-postApiV1Upload')
    } finally {
      await close()
    }
  })
})
