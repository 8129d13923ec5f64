/**
 * Leaving, in Chromium: the dashboard's Settings tab downloads the account's data (a zip `unzip` reads) and deletes the
 * account through a dialog that asks for the password, reached and closed by keyboard, axe-clean while open; the
 * deleted account's image link answers 404.
 */
import { afterAll, beforeAll, describe, expect, test } from 'bun:test'
import AxeBuilder from '@axe-core/playwright'
import type { Browser, Page } from 'playwright-core'
import { addVirtualAuthenticator, launchBrowser } from '../browser'
import { jsonBody, type TestServer, userWithKey } from '../helpers'
import { uploadImage } from '../pages/support'
import { expectClean, openPage, startWebServer } from './support'

const TIMEOUT = 60_000
let t: TestServer
let browser: Browser

beforeAll(async () => {
  t = await startWebServer()
  browser = await launchBrowser()
}, TIMEOUT)
afterAll(async () => {
  await browser?.close()
  await t?.stop()
}, TIMEOUT)

async function seriousViolations(page: Page): Promise<string[]> {
  const { violations } = await new AxeBuilder({ page }).analyze()
  return violations
    .filter((v) => v.impact === 'serious' || v.impact === 'critical')
    .flatMap((v) => v.nodes.map((n) => `${v.id} (${v.impact}): ${n.target.join(' ')}: ${n.failureSummary ?? v.help}`))
}

const focusedId = (page: Page) => page.evaluate(() => document.activeElement?.id ?? '')

describe('leaving from the dashboard', () => {
  test(
    'download my data, then delete my account through the dialog: its image link answers 404',
    async () => {
      const account = await userWithKey(t)
      const image = await uploadImage(t, account.keyHeader, {}, { name: 'leaf.png' })
      const p = await openPage(browser, t, '/dashboard#settings', { token: account.token })
      try {
        const { page } = p
        await page.waitForSelector('#panel-settings:not([hidden])')

        // The download: a zip with the image's original in it.
        const [download] = await Promise.all([page.waitForEvent('download'), page.click('#export-data')])
        expect(download.suggestedFilename()).toMatch(new RegExp(`^${account.user.username}-export-.*\\.zip$`))
        const path = await download.path()
        const listed = Bun.spawnSync(['unzip', '-Z1', path])
        expect(listed.exitCode).toBe(0)
        expect(listed.stdout.toString().trim().split('\n')).toContain(`images/${image.id}.png`)
        expect(Bun.spawnSync(['unzip', '-t', path]).exitCode).toBe(0)

        // The dialog, by keyboard: it opens on Enter with the password focused, and Escape closes it, focus back.
        await page.focus('#delete-account')
        await page.keyboard.press('Enter')
        await page.waitForSelector('#delete-dialog[open]')
        expect(await focusedId(page)).toBe('delete-password')
        expect(await seriousViolations(page)).toEqual([])
        await page.emulateMedia({ colorScheme: 'dark' })
        expect(await seriousViolations(page)).toEqual([])
        await page.emulateMedia({ colorScheme: 'light' })
        await page.keyboard.press('Escape')
        await page.waitForSelector('#delete-dialog:not([open])', { state: 'attached' })
        expect(await focusedId(page)).toBe('delete-account')

        // A wrong password: said in the dialog, which stays open; nothing is deleted.
        await page.click('#delete-account')
        await page.fill('#delete-password', 'not my password')
        await page.keyboard.press('Enter')
        await page.waitForSelector('#delete-form [data-form-error]:not([hidden])')
        expect(await page.textContent('#delete-form [data-form-error]')).toContain('password')
        expect(await page.isVisible('#delete-dialog')).toBe(true)
        expect((await fetch(image.url)).status).toBe(200)

        // The right one: the account goes, its session with it, and the image's link answers 404.
        await page.fill('#delete-password', account.password)
        await Promise.all([page.waitForURL(`${t.url}/`), page.click('#delete-form button[type="submit"]')])
        expect((await fetch(image.url)).status).toBe(404)
        expect((await t.fetch(`/api/v1/image/${image.id}`)).status).toBe(404)
        expect((await t.json('/api/auth/me', { headers: account.bearer })).status).toBe(401)
        // The wrong password's 403, as Chromium logs any refused request; and the 401 of the page landed on, whose
        // token the test's init script puts back on every load (the page itself dropped it).
        expectClean(p, [/status of 403/, /status of 401/])
      } finally {
        await p.close()
      }
    },
    TIMEOUT,
  )

  test(
    'a passkey confirms instead of the password; an answer to another ceremony is refused (403), nothing deleted',
    async () => {
      const account = await userWithKey(t)
      const image = await uploadImage(t, account.keyHeader, {}, { name: 'key.png' })
      const p = await openPage(browser, t, '/dashboard#settings', { token: account.token })
      try {
        const { page } = p
        await addVirtualAuthenticator(p.context, page)
        const post = (path: string, body: unknown = {}) =>
          t.json(path, { method: 'POST', ...jsonBody(body, account.bearer) })
        // A passkey, made by the browser through the site's own passkeys.js.
        const options = await post('/api/auth/passkeys/register/options')
        const made = await page.evaluate((o) => (window as any).imghost.passkeys.create(o), options.body.options)
        expect((await post('/api/auth/passkeys/register', { response: made })).status).toBe(201)

        // Signed for a sign-in's challenge, not the deletion's: refused, as a wrong password is.
        const login = await post('/api/auth/passkeys/login/options')
        const signed = await page.evaluate((o) => (window as any).imghost.passkeys.get(o), login.body.options)
        const refused = await t.json('/api/account', {
          method: 'DELETE',
          ...jsonBody({ passkey: signed }, account.bearer),
        })
        expect(refused.status).toBe(403)
        expect((await fetch(image.url)).status).toBe(200)

        await page.waitForSelector('#panel-settings:not([hidden])')
        await page.click('#delete-account')
        await page.waitForSelector('#delete-passkey:not([hidden])')
        await Promise.all([page.waitForURL(`${t.url}/`), page.click('#delete-passkey')])
        expect((await fetch(image.url)).status).toBe(404)
        expect((await t.json('/api/auth/me', { headers: account.bearer })).status).toBe(401)
        expectClean(p, [/status of 403/, /status of 401/])
      } finally {
        await p.close()
      }
    },
    TIMEOUT,
  )
})
