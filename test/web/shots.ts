// Scratch: screenshots of the pages against a running dev server.
import { launchBrowser } from '../browser'
const [url, token, ...paths] = process.argv.slice(2)
const browser = await launchBrowser()
for (const width of [1280, 375]) {
  const ctx = await browser.newContext({ viewport: { width, height: 900 } })
  const page = await ctx.newPage()
  page.on('console', (m) => m.type() === 'error' && console.log('console:', m.text()))
  page.on('response', (r) => r.status() >= 400 && console.log('HTTP', r.status(), r.url()))
  page.on('pageerror', (e) => console.log('pageerror:', String(e)))
  if (token !== '-') await ctx.addInitScript((t) => localStorage.setItem('imghost.token', t), token)
  for (const p of paths) {
    await page.goto(url + p, { waitUntil: 'networkidle' })
    await page.waitForTimeout(300)
    const name = `/tmp/webdev/${p.replace(/[^\w]+/g, '_') || 'root'}-${width}.png`
    await page.screenshot({ path: name, fullPage: true })
    console.log(name)
  }
  await ctx.close()
}
await browser.close()
