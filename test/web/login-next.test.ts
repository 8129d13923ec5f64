/**
 * The login page's `?next=` (checked by src/http/next-path.ts, followed by src/web/assets/auth.js) only ever leads to
 * a path of this site (issue 17: after logging in from `/login?next=%2F%09%2Fevil.example` the browser landed on
 * another site, since browsers drop the tab and read `//evil.example`; issue 33: `/.//evil.example/x` and `/..//x`
 * resolve to `//evil.example/x` and `//x`). Each hostile form is logged in with in Chromium; the page must end on this
 * origin, and no request may have left for another host.
 */
import { afterAll, beforeAll, describe, expect, test } from 'bun:test'
import type { Browser } from 'playwright-core'
import { launchBrowser, newIsolatedPage } from '../browser'
import { registerUser, startTestServer, type TestServer } from '../helpers'

const TIMEOUT = 60_000
let t: TestServer
let browser: Browser
let account: Awaited<ReturnType<typeof registerUser>>

beforeAll(async () => {
  t = await startTestServer()
  browser = await launchBrowser()
  account = await registerUser(t)
}, TIMEOUT)
afterAll(async () => {
  await browser?.close()
  await t?.stop()
}, TIMEOUT)

/** Logs in on `/login?next=<rawNext>` (already percent-encoded) and returns where the browser ends up. */
async function loginWithNext(rawNext: string) {
  const p = await newIsolatedPage(browser, t.url)
  try {
    await p.page.goto(`${t.url}/login?next=${rawNext}`)
    await p.page.waitForSelector('#login-form button[type="submit"]:not([disabled])')
    await p.page.fill('#login-username', account.user.username)
    await p.page.fill('#login-password', account.password)
    await Promise.all([
      p.page.waitForURL((url) => !url.pathname.startsWith('/login'), { timeout: 15_000 }).catch(() => {}),
      p.page.click('#login-form button[type="submit"]'),
    ])
    await p.page.waitForLoadState('load')
    return { url: new URL(p.page.url()), blocked: [...p.blocked] }
  } finally {
    await p.close()
  }
}

describe('login ?next= stays on this site', () => {
  const hostile = [
    '%2F%09%2Fevil.example', // "/<tab>/evil.example": the tab is dropped, leaving //evil.example
    '%2F%0A%2Fevil.example', // a newline, dropped the same way
    '%2F%0D%2Fevil.example',
    '//evil.example',
    '%2F%2Fevil.example',
    '/%5Cevil.example', // "/\evil.example": a backslash reads as a slash
    '%5C%5Cevil.example',
    '/%5C/evil.example',
    'https://evil.example/',
    'https:evil.example',
    '%20//evil.example',
    '/%E2%80%A8/evil.example', // a Unicode line separator
    'javascript:alert(1)',
    '/.//evil.example/x', // dot segments: resolved, it is //evil.example/x
    '%2F.%2F%2Fevil.example%2Fx',
    '/..//evil.example/x',
    '/a/../..//evil.example',
    '/%2E%2E//evil.example', // percent-encoded dots: decoded once, then resolved like the others
  ]
  for (const next of hostile) {
    test(
      `next=${next} lands on this site's dashboard`,
      async () => {
        const { url, blocked } = await loginWithNext(next)
        expect(url.origin).toBe(new URL(t.url).origin)
        expect(url.pathname).toBe('/dashboard')
        expect(blocked).toEqual([])
      },
      TIMEOUT,
    )
  }

  test(
    'a path of this site is followed, with its query and fragment',
    async () => {
      const { url } = await loginWithNext(encodeURIComponent('/gallery?page=1#top'))
      expect(url.origin).toBe(new URL(t.url).origin)
      expect(url.pathname + url.search + url.hash).toBe('/gallery?page=1#top')
    },
    TIMEOUT,
  )
})
