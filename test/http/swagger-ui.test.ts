import { afterAll, beforeAll, describe, expect, test } from 'bun:test'
import { existsSync, statSync } from 'node:fs'
import type { Browser } from 'playwright-core'
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
})
