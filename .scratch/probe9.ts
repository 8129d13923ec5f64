import { startTestServer } from '../test/helpers'
import { launchBrowser, newIsolatedPage } from '../test/browser'
const t = await startTestServer({}, { classifier: { classify: async () => ({}), warm: async () => {}, close: async () => {}, queueDepth: 0 } as any })
const browser = await launchBrowser()
const p = await newIsolatedPage(browser, t.url)
const msgs: string[] = []
p.page.on('console', (m) => msgs.push(m.type() + ' ' + m.text()))
const s = performance.now()
await p.page.goto(t.url + '/swagger', { waitUntil: 'load' })
await p.page.waitForSelector('.opblock', { timeout: 30000 })
console.log('ops', await p.page.locator('.opblock').count(), Math.round(performance.now() - s), 'ms')
// try expanding one op and "try it out"
await p.page.locator('.opblock-summary').first().click()
await p.page.waitForTimeout(500)
console.log(msgs, p.pageErrors, p.blocked)
await browser.close(); await t.stop()
