import { expect } from 'bun:test'
import type { Browser, Page } from 'playwright-core'
import type { Classifier } from '../../src/moderation'
import { type IsolatedPage, newIsolatedPage, screenshot } from '../browser'
import { makeImage } from '../fixtures'
import { startTestServer, type TestServer } from '../helpers'

/** The web pages never need the real model: a classifier that finds everything neutral. */
const neutralClassifier: Classifier = {
  classify: async () => ({ Porn: 0.01, Hentai: 0.01, Sexy: 0.01, Neutral: 0.95, Drawing: 0.02 }),
  warm: async () => {},
  close: async () => {},
  queueDepth: 0,
}

export interface WebServer extends TestServer {
  /** The last verification token mailed to each address. */
  mailed: Map<string, string>
  /** The last password reset token mailed to each address. */
  resets: Map<string, string>
}

/** The real app with a neutral classifier and a mailer that keeps the tokens it mails for the test. */
export async function startWebServer(env: Record<string, string> = {}): Promise<WebServer> {
  const mailed = new Map<string, string>()
  const resets = new Map<string, string>()
  const t = await startTestServer(
    { SITE_NAME: 'Pixbin', ...env },
    {
      classifier: neutralClassifier,
      mailer: {
        sendVerification: async (to, token) => {
          mailed.set(to, token)
        },
        sendPasswordReset: async (to, token) => {
          resets.set(to, token)
        },
      },
    },
  )
  return Object.assign(t, { mailed, resets })
}

export type WebPage = IsolatedPage & { problems: string[] }

/**
 * A page that can reach only the test server (every other request is blocked and recorded), with console errors and
 * page errors recorded too. `expectClean` asserts all three stayed empty.
 */
export async function openPage(
  browser: Browser,
  t: TestServer,
  path: string,
  opts: { dark?: boolean; token?: string } = {},
): Promise<WebPage> {
  const isolated = await newIsolatedPage(browser, t.url)
  const problems: string[] = []
  isolated.page.on('console', (msg) => {
    if (msg.type() === 'error') problems.push(msg.text())
  })
  if (opts.dark) await isolated.page.emulateMedia({ colorScheme: 'dark' })
  await isolated.context.grantPermissions(['clipboard-read', 'clipboard-write'], { origin: t.url })
  if (opts.token)
    await isolated.context.addInitScript((token) => localStorage.setItem('imghost.token', token), opts.token)
  await isolated.page.goto(t.url + path, { waitUntil: 'load' })
  return { ...isolated, problems }
}

export function expectClean(p: WebPage, allowedProblems: RegExp[] = []) {
  expect(p.blocked).toEqual([])
  expect(p.pageErrors).toEqual([])
  expect(p.problems.filter((problem) => !allowedProblems.some((re) => re.test(problem)))).toEqual([])
}

/** Full-page screenshots of the page as it is now, on a desktop and on a phone-sized (375px) viewport. */
export async function shoot(page: Page, name: string) {
  const size = page.viewportSize() ?? { width: 1280, height: 900 }
  await waitForImages(page)
  await screenshot(page, `${name}-desktop`)
  await page.setViewportSize({ width: 375, height: 740 })
  await waitForImages(page)
  await screenshot(page, `${name}-phone`)
  await page.setViewportSize(size)
}

/** Waits until every <img> with a source has finished loading (or failed). */
export async function waitForImages(page: Page) {
  await page.waitForFunction(
    () =>
      [...document.images]
        // Images in hidden panels, and lazy ones far below the fold, are not loaded until they are needed.
        .filter(
          (img) =>
            img.checkVisibility() && (img.loading !== 'lazy' || img.getBoundingClientRect().top < innerHeight + 1000),
        )
        .every((img) => !img.getAttribute('src') || img.complete),
    undefined,
    { timeout: 10_000 },
  )
}

let seed = 100
/** A PNG as a file for the file input. */
export async function pngFile(name: string, width = 120, height = 90) {
  return { name, mimeType: 'image/png', buffer: Buffer.from(await makeImage('png', width, height, ++seed)) }
}

/** Presses Tab until `done` holds for the focused element (or `max` presses); returns what was focused, in order. */
export async function tabUntil(page: Page, done: (focused: FocusInfo) => boolean, max = 60): Promise<FocusInfo[]> {
  const seen: FocusInfo[] = []
  for (let i = 0; i < max; i++) {
    await page.keyboard.press('Tab')
    const info = await page.evaluate(() => {
      const el = document.activeElement as HTMLElement | null
      return {
        tag: el?.tagName.toLowerCase() ?? '',
        id: el?.id ?? '',
        text: (el?.textContent ?? '').trim(),
        href: el?.getAttribute('href') ?? null,
        value: el instanceof HTMLInputElement || el instanceof HTMLTextAreaElement ? el.value : null,
        label: el?.getAttribute('aria-label') ?? null,
        copy: el?.getAttribute('data-copy') ?? null,
      }
    })
    seen.push(info)
    if (done(info)) return seen
  }
  return seen
}

export interface FocusInfo {
  tag: string
  id: string
  text: string
  href: string | null
  value: string | null
  label: string | null
  copy: string | null
}
