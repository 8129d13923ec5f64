/**
 * Two-factor and single sign-on in Chromium: the dashboard's TOTP card (set up from the QR code's key, recovery codes
 * shown once, turned off), the login page's code step, and the "Sign in with ..." button through a real OpenID
 * provider on loopback back to the dashboard.
 */
import { afterAll, beforeAll, describe, expect, test } from 'bun:test'
import { Secret, TOTP } from 'otpauth'
import type { Browser } from 'playwright-core'
import { serverWithProvider, type TestProvider } from '../auth/oidc-provider'
import { launchBrowser } from '../browser'
import { jsonBody, registerUser, type TestServer } from '../helpers'
import { openPage } from './support'

const TIMEOUT = 60_000
const STEP_MS = 30_000
let clock = Date.UTC(2030, 0, 1)
let t: TestServer
let provider: TestProvider
let browser: Browser

beforeAll(async () => {
  ;({ server: t, provider } = await serverWithProvider({ now: () => clock }))
  browser = await launchBrowser()
}, TIMEOUT)
afterAll(async () => {
  await browser?.close()
  await t?.stop()
  await provider?.stop()
}, TIMEOUT)

const codeOf = (secret: string) =>
  new TOTP({ secret: Secret.fromBase32(secret), digits: 6, period: 30, algorithm: 'SHA1' }).generate({
    timestamp: clock,
  })

const login = (username: string, password: string) =>
  t.json('/api/auth/login', { method: 'POST', ...jsonBody({ username, password }) })

describe('two-factor in the browser', () => {
  test(
    'set up from the dashboard, then log in through the code step, then turn it off',
    async () => {
      const account = await registerUser(t)
      const p = await openPage(browser, t, '/dashboard#security', { token: account.token })
      try {
        const { page } = p
        await page.click('#totp-setup')
        await page.waitForSelector('#totp-enable-form:not([hidden])')
        expect(await page.getAttribute('#totp-qr', 'src')).toStartWith('data:image/svg+xml;base64,')
        // The QR code is made on the server and shown as an image that loaded.
        expect(await page.$eval('#totp-qr', (img: HTMLImageElement) => img.complete && img.naturalWidth > 0)).toBe(true)
        const secret = (await page.textContent('#totp-secret'))!
        await page.fill('#totp-enable-code', '000000')
        await page.click('#totp-enable-form button[type="submit"]')
        await page.waitForSelector('#totp-enable-form [data-form-error]:not([hidden])')
        await page.fill('#totp-enable-code', codeOf(secret))
        await page.click('#totp-enable-form button[type="submit"]')
        await page.waitForSelector('#totp-recovery:not([hidden])')
        const codes = await page.$$eval('#totp-recovery-list code', (nodes) => nodes.map((n) => n.textContent))
        expect(codes).toHaveLength(10)
        await page.click('#totp-recovery-done')
        await page.waitForSelector('#totp-disable-form:not([hidden])')
        expect(await page.textContent('#totp-status')).toContain('10 recovery codes left')
        expect((await login(account.user.username, account.password)).body.twoFactor).toBe('totp')

        // The login page: the password first, then the code the account asks for.
        clock += STEP_MS
        await page.evaluate(() => localStorage.clear())
        await page.goto(`${t.url}/login`)
        await page.waitForSelector('#login-form button[type="submit"]:not([disabled])')
        expect(await page.isHidden('#login-totp')).toBe(true)
        await page.fill('#login-username', account.user.username)
        await page.fill('#login-password', account.password)
        await page.click('#login-form button[type="submit"]')
        await page.waitForSelector('#login-totp:not([hidden])')
        expect(await page.evaluate(() => document.activeElement?.id)).toBe('login-code')
        await page.fill('#login-code', codeOf(secret))
        await Promise.all([page.waitForURL(`${t.url}/dashboard`), page.click('#login-form button[type="submit"]')])

        // Turned off with a recovery code.
        await page.goto(`${t.url}/dashboard#security`)
        await page.waitForSelector('#totp-disable-form:not([hidden])')
        await page.fill('#totp-disable-code', codes[0]!)
        await page.click('#totp-disable-form button[type="submit"]')
        await page.waitForSelector('#totp-setup:not([hidden])')
        expect(await page.textContent('#totp-status')).toContain('Two-factor is off')
        expect((await login(account.user.username, account.password)).status).toBe(200)
        expect(p.pageErrors).toEqual([])
        // The wrong code (400) and the login that asked for a code (401) are logged by the browser; nothing else is.
        expect(p.problems.filter((m) => !/status of (400|401)\b/.test(m))).toEqual([])
      } finally {
        await p.close()
      }
    },
    TIMEOUT,
  )
})

describe('single sign-on in the browser', () => {
  test(
    '"Sign in with Test ID" goes through the provider and lands on the dashboard, signed in',
    async () => {
      provider.accounts.set('sub-browser', { email: 'browser@example.org', email_verified: true })
      const p = await openPage(browser, t, '/login?next=%2Fdashboard%23security')
      try {
        const { page } = p
        expect(await page.textContent('#sso-start')).toBe('Sign in with Test ID')
        await page.click('#sso-start')
        // The provider's own sign-in and consent pages.
        await page.waitForSelector('input[name="login"]')
        await page.fill('input[name="login"]', 'sub-browser')
        await page.fill('input[name="password"]', 'anything')
        await page.click('button[type="submit"]')
        await page.waitForSelector('form input[name="prompt"][value="consent"]', { state: 'attached' })
        await Promise.all([page.waitForURL(`${t.url}/dashboard#security`), page.click('button[type="submit"]')])
        const token = await page.evaluate(() => localStorage.getItem('imghost.token'))
        const me = await t.json('/api/auth/me', { headers: { authorization: `Bearer ${token}` } })
        expect(me.body.user.email).toBe('browser@example.org')
        await page.waitForSelector('#dash-user a')
      } finally {
        await p.close()
      }
    },
    TIMEOUT,
  )

  test(
    'a refused sign-in shows its message on the login page, and the fragment leaves the address bar',
    async () => {
      const p = await openPage(browser, t, `/login#${new URLSearchParams({ error: 'Sign-in with Test ID failed' })}`)
      try {
        await p.page.waitForSelector('[data-sso-error]:not([hidden])')
        expect(await p.page.textContent('[data-sso-error]')).toBe('Sign-in with Test ID failed')
        expect(new URL(p.page.url()).hash).toBe('')
        expect(await p.page.evaluate(() => localStorage.getItem('imghost.token'))).toBeNull()
      } finally {
        await p.close()
      }
    },
    TIMEOUT,
  )
})
