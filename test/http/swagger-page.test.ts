import { afterAll, beforeAll, describe, expect, test } from 'bun:test'
import { parse } from 'node-html-parser'
import { startTestServer, type TestServer } from '../helpers'

let t: TestServer
beforeAll(async () => {
  t = await startTestServer()
})
afterAll(() => t.stop())

/** The document URL the page hands to SwaggerUIBundle, resolved against the page's own address like a browser does. */
function specUrl(page: string, pageUrl: string): string {
  const options = page.match(/SwaggerUIBundle\((\{[\s\S]*?\})\);/)
  expect(options).not.toBeNull()
  return new URL(JSON.parse(options?.[1] ?? '{}').url, pageUrl).href
}

describe('the Swagger UI page', () => {
  for (const path of ['/swagger', '/swagger/']) {
    test(`${path} serves the page with its headers, and the document it references loads`, async () => {
      const res = await t.fetch(path)
      expect(res.status).toBe(200)
      expect(res.headers.get('content-type')).toContain('text/html')
      expect(res.headers.get('content-security-policy')).toContain("script-src 'self' 'sha256-")
      const page = await res.text()
      const spec = specUrl(page, t.url + path)
      expect(spec).toBe(`${t.url}/swagger/json`)
      const doc = await fetch(spec)
      expect(doc.status).toBe(200)
      const document = (await doc.json()) as { openapi: string; info: { description: string } }
      expect(document.openapi).toStartWith('3.')
      // The plugin writes the description into a meta tag unescaped: whole there only while it has no double quote.
      const description = parse(page).querySelector('meta[name="description"]')?.getAttribute('content')
      expect(description).toBe(document.info.description)
    })
  }

  test('every colour in the inline dark-mode style is a valid CSS hex colour', async () => {
    const page = await (await t.fetch('/swagger')).text()
    const style = page.match(/<style>([\s\S]*?)<\/style>/)?.[1] ?? ''
    expect(style).toContain('prefers-color-scheme: dark')
    const colours = [...style.matchAll(/#[0-9a-f]+\b/gi)].map((m) => m[0])
    expect(colours.length).toBeGreaterThan(0)
    for (const colour of colours) expect([4, 5, 7, 9]).toContain(colour.length)
  })
})
