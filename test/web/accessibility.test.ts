import { afterAll, beforeAll, describe, expect, test } from 'bun:test'
import AxeBuilder from '@axe-core/playwright'
import type { Browser, BrowserContext, Page } from 'playwright-core'
import { launchBrowser } from '../browser'
import { jsonBody, makeAdmin, type TestServer, userWithKey } from '../helpers'
import { send, uploadImage } from '../pages/support'
import { pngFile, startWebServer, waitForImages } from './support'

/**
 * axe over every page and state, in both schemes: the system's (emulated prefers-color-scheme) and the header toggle's.
 * One server and one browser for the whole sweep; each state is a path plus what to do there before the check.
 */

/** Where site.js keeps the toggle's choice and theme.js reads it. */
const THEME_KEY = 'imghost.theme'

let t: TestServer
let browser: Browser
let context: BrowserContext
let admin: Awaited<ReturnType<typeof userWithKey>>
const ids: Record<string, string> = {}

beforeAll(async () => {
  t = await startWebServer()
  admin = await userWithKey(t, 'alice')
  await makeAdmin(t, admin.user.id)
  const plain = await uploadImage(t, admin.keyHeader, {}, { name: 'mountain "lake".png', width: 320, height: 200 })
  const mature = await uploadImage(t, admin.keyHeader, { nsfw: 'true' }, { name: 'mature.png' })
  const album = await t.json('/api/albums', send('POST', { title: 'Trip', isPublic: true }, admin.bearer))
  await t.json(`/api/albums/${album.body.album.id}/images`, send('POST', { imageId: plain.id }, admin.bearer))
  await t.json('/api/reports', { method: 'POST', ...jsonBody({ imageId: plain.id, reason: 'spam', details: 'ads' }) })
  Object.assign(ids, { plain: plain.id, mature: mature.id, album: album.body.album.id })
  browser = await launchBrowser()
  context = await browser.newContext({ serviceWorkers: 'block', viewport: { width: 1280, height: 900 } })
})
afterAll(async () => {
  await browser?.close()
  await t.stop()
})

/** The serious and critical findings of axe on the page as it is now, one line each (empty: none). */
async function seriousViolations(page: Page): Promise<string[]> {
  const { violations } = await new AxeBuilder({ page }).analyze()
  return violations
    .filter((v) => v.impact === 'serious' || v.impact === 'critical')
    .flatMap((v) => v.nodes.map((n) => `${v.id} (${v.impact}): ${n.target.join(' ')}: ${n.failureSummary ?? v.help}`))
}

async function settle(page: Page) {
  await page.waitForLoadState('load')
  await waitForImages(page)
}

interface State {
  name: string
  path: string
  signedIn?: boolean
  /** Brings the page into the state (after load). */
  prepare?: (page: Page) => Promise<void>
}

const dashboardTab = (tab: string): State => ({
  name: `dashboard ${tab}`,
  path: `/dashboard#${tab}`,
  signedIn: true,
  prepare: async (page) => {
    await page.waitForSelector(`[data-panel="${tab}"]:not([hidden])`)
    await page.waitForFunction(() => !document.getElementById('dash-user')?.textContent?.startsWith('Loading'))
    if (tab === 'images') await page.waitForSelector('#image-grid .dash-tile')
  },
})

const STATES = (): State[] => [
  { name: 'upload', path: '/' },
  {
    name: 'upload with a result',
    path: '/',
    prepare: async (page) => {
      await page.setInputFiles('#file-input', await pngFile('result.png'))
      await page.click('#upload-start')
      await page.waitForSelector('.upload-item[data-state="done"] .result')
    },
  },
  { name: 'gallery', path: '/gallery' },
  { name: 'viewer', path: `/i/${ids.plain}` },
  { name: 'NSFW viewer', path: `/i/${ids.mature}` },
  { name: 'album', path: `/a/${ids.album}` },
  { name: 'profile', path: '/u/alice' },
  { name: 'login', path: '/login' },
  { name: 'register', path: '/register' },
  ...['images', 'albums', 'keys', 'embeds', 'usage', 'settings', 'security'].map(dashboardTab),
  {
    ...dashboardTab('images'),
    name: 'dashboard image dialog',
    prepare: async (page) => {
      await dashboardTab('images').prepare?.(page)
      await page
        .getByRole('button', { name: /^Links & edit/ })
        .first()
        .click()
      await page.waitForSelector('#image-dialog[open]')
    },
  },
  {
    name: 'admin reports',
    path: '/admin/reports',
    signedIn: true,
    prepare: async (page) => {
      await page.waitForSelector('.report-item')
    },
  },
]

/** Opens the state with the system in `scheme` and no stored choice. */
async function open(state: State, scheme: 'light' | 'dark'): Promise<Page> {
  const page = await context.newPage()
  await page.emulateMedia({ colorScheme: scheme })
  await page.goto(`${t.url}/login`)
  await page.evaluate(
    ({ key, token }) => {
      localStorage.removeItem(key)
      if (token) localStorage.setItem('imghost.token', token)
      else localStorage.removeItem('imghost.token')
    },
    { key: THEME_KEY, token: state.signedIn ? admin.token : null },
  )
  await page.goto(t.url + state.path)
  await settle(page)
  await state.prepare?.(page)
  return page
}

describe('accessibility: axe finds nothing serious on any page, light or dark', () => {
  test('every page and state, with the system scheme and with the toggle', async () => {
    const found: string[] = []
    const check = async (page: Page, label: string) => {
      for (const line of await seriousViolations(page)) found.push(`${label}: ${line}`)
    }
    for (const state of STATES()) {
      for (const scheme of ['light', 'dark'] as const) {
        const page = await open(state, scheme)
        try {
          await check(page, `${state.name} [system ${scheme}]`)
          // The toggle switches to the other scheme in place (pressed by script: a modal dialog makes the header inert).
          await page.evaluate(() => document.getElementById('theme-toggle')?.click())
          const other = scheme === 'light' ? 'dark' : 'light'
          expect(await page.getAttribute('html', 'data-theme')).toBe(other)
          // Colours with a transition (the drop zone's) are measured once it has ended, not halfway.
          await page.evaluate(() => Promise.all(document.getAnimations().map((animation) => animation.finished)))
          await check(page, `${state.name} [toggled ${other}]`)
        } finally {
          await page.close()
        }
      }
    }
    if (found.length) console.log(found.join('\n'))
    expect(found).toEqual([])
  }, 600_000)
})

describe('dashboard', () => {
  test("an admin's dashboard links to the reports page", async () => {
    const page = await open(dashboardTab('images'), 'light')
    try {
      await page.click('#dash-user a[href="/admin/reports"]')
      await page.waitForSelector('.report-item')
      expect(new URL(page.url()).pathname).toBe('/admin/reports')
    } finally {
      await page.close()
    }
  })
})

describe('theme toggle', () => {
  test('the choice is remembered per browser and applied by theme.js; the system decides otherwise', async () => {
    const page = await open({ name: 'upload', path: '/' }, 'light')
    const errors: string[] = []
    page.on('console', (msg) => {
      if (msg.type() === 'error') errors.push(msg.text())
    })
    // theme.js runs before the first paint: in the head, ahead of the stylesheets, not deferred.
    const head = (await (await t.fetch('/gallery')).text()).split('</head>')[0]
    const themeTag = /<script src="\/assets\/theme\.js\?v=[0-9a-f]+"><\/script>/.exec(head)
    expect(themeTag).not.toBeNull()
    expect(themeTag!.index).toBeLessThan(head.indexOf('<link rel="stylesheet"'))
    const background = () => page.evaluate(() => getComputedStyle(document.body).backgroundColor)
    const toggle = page.locator('#theme-toggle')
    try {
      const light = await background()
      expect(await toggle.getAttribute('aria-pressed')).toBe('false')
      expect(await page.getAttribute('html', 'data-theme')).toBeNull()
      await toggle.click()
      const dark = await background()
      expect(dark).not.toBe(light)
      expect(await toggle.getAttribute('aria-pressed')).toBe('true')
      expect(await page.evaluate((key) => localStorage.getItem(key), THEME_KEY)).toBe('dark')

      // Another page of the site, without site.js: theme.js alone set the theme.
      await page.route('**/assets/site.js*', (route) => route.abort())
      await page.goto(`${t.url}/gallery`)
      expect(await page.getAttribute('html', 'data-theme')).toBe('dark')
      expect(await background()).toBe(dark)
      await page.unroute('**/assets/site.js*')

      // Back to light by the toggle, even with the system dark; a cleared choice follows the system again.
      await page.emulateMedia({ colorScheme: 'dark' })
      await page.reload()
      await toggle.click()
      expect(await background()).toBe(light)
      expect(await page.evaluate((key) => localStorage.getItem(key), THEME_KEY)).toBe('light')
      await page.evaluate((key) => localStorage.removeItem(key), THEME_KEY)
      await page.reload()
      expect(await page.getAttribute('html', 'data-theme')).toBeNull()
      expect(await background()).toBe(dark)
      expect(await toggle.getAttribute('aria-pressed')).toBe('true')
      // No error but the aborted site.js's.
      expect(errors.filter((e) => e !== 'Failed to load resource: net::ERR_FAILED')).toEqual([])
    } finally {
      await page.close()
    }
  }, 120_000)
})
