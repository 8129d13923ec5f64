/**
 * The account pages of issue 23 in Chromium: forgot and reset a password from the mailed link, the dashboard's
 * "Password and sessions" section (list, end, change the password, log out), and an invite's link on the register page.
 */
import { afterAll, beforeAll, describe, expect, setDefaultTimeout, test } from 'bun:test'
import type { Browser } from 'playwright-core'
import { launchBrowser } from '../browser'
import { jsonBody, registerUser } from '../helpers'
import { expectClean, openPage, shoot, startWebServer, type WebServer } from './support'

setDefaultTimeout(60_000)

let t: WebServer
let browser: Browser

beforeAll(async () => {
  t = await startWebServer()
  browser = await launchBrowser()
})
afterAll(async () => {
  await browser?.close()
  await t?.stop()
})

const me = (token: string) => t.json('/api/auth/me', { headers: { authorization: `Bearer ${token}` } })
const login = (username: string, password: string) =>
  t.json('/api/auth/login', { method: 'POST', ...jsonBody({ username, password }) })

describe('forgot and reset', () => {
  test('the forgot form mails a link; the reset page reads its token, sets the password and ends every session', async () => {
    const account = await registerUser(t)
    const forgot = await openPage(browser, t, '/login')
    try {
      await Promise.all([forgot.page.waitForURL('**/forgot'), forgot.page.click('a[href="/forgot"]')])
      await forgot.page.fill('#forgot-email', account.user.email)
      await forgot.page.click('#forgot-form button[type="submit"]')
      await forgot.page.waitForSelector('#forgot-sent:not([hidden])')
      expect(await forgot.page.isHidden('#forgot-form')).toBe(true)
      await shoot(forgot.page, 'forgot-sent')
      expectClean(forgot)
    } finally {
      await forgot.close()
    }
    const token = t.resets.get(account.user.email)!
    expect(token).toBeDefined()

    const reset = await openPage(browser, t, `/reset?token=${encodeURIComponent(token)}`)
    try {
      expect(await reset.page.inputValue('#reset-token')).toBe(token)
      // The token leaves the address bar once read.
      expect(new URL(reset.page.url()).search).toBe('')
      await reset.page.fill('#reset-password', 'brand new password')
      await reset.page.click('#reset-form button[type="submit"]')
      await reset.page.waitForSelector('#reset-done:not([hidden])')
      await shoot(reset.page, 'reset-done')
      expectClean(reset)
    } finally {
      await reset.close()
    }
    expect((await me(account.token)).status).toBe(401)
    expect((await login(account.user.username, 'brand new password')).status).toBe(200)

    // The same link again: the page says the token did not work.
    const again = await openPage(browser, t, `/reset?token=${encodeURIComponent(token)}`)
    try {
      await again.page.fill('#reset-password', 'another new password')
      await again.page.click('#reset-form button[type="submit"]')
      await again.page.waitForSelector('#reset-form [data-form-error]:not([hidden])')
      expect(await again.page.textContent('#reset-form [data-form-error]')).toContain('invalid or expired')
      expectClean(again, [/status of 400/])
    } finally {
      await again.close()
    }
  })
})

describe('the dashboard’s password and sessions section', () => {
  test('lists the sessions, ends another one, changes the password, and logs out on the server', async () => {
    const account = await registerUser(t)
    const phone = (await login(account.user.username, account.password)).body.token as string
    const p = await openPage(browser, t, '/dashboard#security', { token: account.token })
    try {
      await p.page.waitForFunction(() => document.querySelectorAll('#session-list [data-session]').length === 2)
      expect(await p.page.textContent('#session-list')).toContain('(this browser)')
      await shoot(p.page, 'dashboard-sessions')

      const sid = JSON.parse(Buffer.from(phone.split('.')[1], 'base64url').toString()).sid
      await p.page.click(`#session-list [data-session="${sid}"] button`)
      await p.page.waitForFunction(() => document.querySelectorAll('#session-list [data-session]').length === 1)
      expect(await p.page.textContent('#sessions-status')).toContain('Session ended')
      expect((await me(phone)).status).toBe(401)

      await p.page.fill('#current-password', 'not the password')
      await p.page.fill('#new-password', 'a better password')
      await p.page.click('#password-form button[type="submit"]')
      await p.page.waitForSelector('#password-form [data-form-error]:not([hidden])')
      expect(await p.page.textContent('#password-form [data-form-error]')).toContain('currentPassword')

      const laptop = (await login(account.user.username, account.password)).body.token as string
      await p.page.fill('#current-password', account.password)
      await p.page.fill('#new-password', 'a better password')
      await p.page.click('#password-form button[type="submit"]')
      await p.page.waitForFunction(() => document.getElementById('password-status')!.textContent!.includes('changed'))
      expect((await me(laptop)).status).toBe(401)
      expect((await me(account.token)).status).toBe(200)

      const [loggedOut] = await Promise.all([
        p.page.waitForResponse((res) => res.url().endsWith('/api/auth/logout')),
        p.page.click('#sessions-section a[href="/logout"]'),
      ])
      expect(loggedOut.status()).toBe(204)
      expect(await p.page.evaluate(() => localStorage.getItem('imghost.token'))).toBeNull()
      // The logout reached the server: the token no longer works anywhere.
      expect((await me(account.token)).status).toBe(401)
      expectClean(p, [/status of 400/])
    } finally {
      await p.close()
    }
  })
})

describe('an invite link', () => {
  test('fills in the code on the register page, and registering with it works', async () => {
    const invited = await startWebServer({
      REGISTRATION: 'invite',
      ADMIN_USERNAME: 'root',
      ADMIN_EMAIL: 'root@example.com',
      ADMIN_PASSWORD: 'root password!',
    })
    try {
      const admin = await invited.json('/api/auth/login', {
        method: 'POST',
        ...jsonBody({ username: 'root', password: 'root password!' }),
      })
      const invite = await invited.json('/api/admin/invites', {
        method: 'POST',
        ...jsonBody({}, { authorization: `Bearer ${admin.body.token}` }),
      })
      const path = new URL(invite.body.url).pathname + new URL(invite.body.url).search
      const p = await openPage(browser, invited, path)
      try {
        expect(await p.page.inputValue('#register-invite')).toBe(invite.body.code)
        await p.page.fill('#register-username', 'invitee')
        await p.page.fill('#register-email', 'invitee@example.com')
        await p.page.fill('#register-password', 'correct horse battery')
        await shoot(p.page, 'register-invite')
        await Promise.all([
          p.page.waitForURL('**/dashboard?welcome=1'),
          p.page.click('#register-form button[type="submit"]'),
        ])
        expectClean(p)
      } finally {
        await p.close()
      }
    } finally {
      await invited.stop()
    }
  })
})
