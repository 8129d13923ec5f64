import { mkdirSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { type Browser, type BrowserContext, chromium, type Page } from 'playwright-core'

/** Where screenshots go: SCREENSHOT_DIR, else a folder in the system temp directory. */
export const screenshotDir = process.env.SCREENSHOT_DIR ?? join(tmpdir(), 'imghost-screenshots')

/** Launches the system Chromium (Debian's package; CHROMIUM_PATH overrides) headless, with no background traffic. */
export function launchBrowser(): Promise<Browser> {
  return chromium.launch({
    executablePath: process.env.CHROMIUM_PATH ?? '/usr/bin/chromium',
    args: [
      '--no-sandbox',
      '--disable-gpu',
      '--disable-quic',
      '--no-first-run',
      '--disable-background-networking',
      '--disable-component-update',
      '--disable-sync',
    ],
  })
}

export interface IsolatedPage {
  context: BrowserContext
  page: Page
  /** Every request the page tried to send off this machine (aborted); a test asserts this stays empty. */
  blocked: string[]
  /** Uncaught exceptions thrown by the page's scripts. */
  pageErrors: string[]
  close(): Promise<void>
}

const LOCAL_HOSTS = new Set(['localhost', '127.0.0.1', '[::1]', '::1'])

/**
 * A fresh context and page that can only reach this machine (localhost, 127.0.0.1, and the host of
 * `allowedOrigin`). Any other request is aborted and recorded in `blocked`, so a test can prove that a page
 * works offline. Service workers are blocked so no request can bypass the routing.
 */
export async function newIsolatedPage(browser: Browser, allowedOrigin?: string): Promise<IsolatedPage> {
  const allowed = new Set(LOCAL_HOSTS)
  if (allowedOrigin) allowed.add(new URL(allowedOrigin).hostname)
  const context = await browser.newContext({ serviceWorkers: 'block', viewport: { width: 1280, height: 900 } })
  const blocked: string[] = []
  const pageErrors: string[] = []
  await context.route('**/*', (route) => {
    const url = route.request().url()
    let host = ''
    try {
      host = new URL(url).hostname
    } catch {
      // Not a URL we can read: treat as foreign.
    }
    if (!url.startsWith('data:') && !url.startsWith('blob:') && !allowed.has(host)) {
      blocked.push(url)
      return route.abort('blockedbyclient')
    }
    return route.continue()
  })
  // WebSockets are not routed by context.route: record and refuse those too.
  await context.routeWebSocket(/.*/, (ws) => {
    const host = new URL(ws.url()).hostname
    if (!allowed.has(host)) {
      blocked.push(ws.url())
      return ws.close()
    }
    ws.connectToServer()
  })
  const page = await context.newPage()
  page.on('pageerror', (error) => pageErrors.push(String(error)))
  return { context, page, blocked, pageErrors, close: () => context.close() }
}

/** Saves a full-page PNG as `<screenshotDir>/<name>.png` and returns its path. */
export async function screenshot(page: Page, name: string): Promise<string> {
  mkdirSync(screenshotDir, { recursive: true })
  const path = join(screenshotDir, `${name.replace(/[^\w.-]+/g, '_')}.png`)
  await page.screenshot({ path, fullPage: true })
  return path
}

/**
 * A CDP virtual authenticator for `page`: a platform authenticator with user verification, holding discoverable
 * credentials, that answers WebAuthn ceremonies at once (no person, no prompt). `cdp` drives it further.
 */
export async function addVirtualAuthenticator(context: BrowserContext, page: Page) {
  const cdp = await context.newCDPSession(page)
  await cdp.send('WebAuthn.enable')
  const { authenticatorId } = await cdp.send('WebAuthn.addVirtualAuthenticator', {
    options: {
      protocol: 'ctap2',
      transport: 'internal',
      hasResidentKey: true,
      hasUserVerification: true,
      isUserVerified: true,
    },
  })
  return { cdp, authenticatorId }
}
