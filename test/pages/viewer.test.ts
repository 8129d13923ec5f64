import { afterAll, beforeAll, describe, expect, test } from 'bun:test'
import { type HTMLElement, parse } from 'node-html-parser'
import ogs from 'open-graph-scraper'
import { humanSize } from '../../src/lib/size'
import { escapeHtml } from '../../src/web/html'
import { contentSecurityPolicy } from '../../src/web/page'
import { makeImage, uploadForm } from '../fixtures'
import { type TestServer, userWithKey } from '../helpers'
import { send, startServer, uploadImage } from './support'

let t: TestServer
let owner: Awaited<ReturnType<typeof userWithKey>>
let plain: Awaited<ReturnType<typeof uploadImage>>

beforeAll(async () => {
  t = await startServer({ SITE_NAME: 'Pixbin', SITE_COLOR: '#112233' })
  owner = await userWithKey(t)
  plain = await uploadImage(t, owner.keyHeader, {}, { name: 'beach.png', width: 120, height: 80 })
})
afterAll(() => t.stop())

// Multipart filenames lose everything up to the last slash, so the first one arrives as `script>{{7*7}}.png`.
const HOSTILE_FILENAMES = [
  `"><script>alert(1)</script>{{7*7}}.png`,
  `"><img src=x onerror=alert(1)>{{7*7}}<script>alert(1)'&amp;.png`,
]

async function page(path: string) {
  const res = await t.fetch(path)
  const text = await res.text()
  const doc = parse(text)
  const all = (key: string) =>
    doc.querySelectorAll('meta').filter((m) => m.getAttribute('property') === key || m.getAttribute('name') === key)
  const meta = (key: string) => {
    const found = all(key)
    expect(found.length).toBeLessThanOrEqual(1)
    return found[0]?.getAttribute('content')
  }
  return { res, text, doc, meta, all }
}

/** Every unfurler reads the page over HTTP, as a chat app's link preview does. */
async function unfurl(url: string) {
  const { error, result } = await ogs({
    url,
    urlValidatorSettings: {
      require_tld: false,
      require_protocol: true,
      protocols: ['http', 'https'],
      allow_underscores: true,
    } as never,
    fetchOptions: { headers: { 'user-agent': 'Mozilla/5.0 (compatible; Discordbot/2.0; +https://discordapp.com)' } },
  })
  expect(error).toBe(false)
  return result
}

function expectSecurityHeaders(res: Response) {
  const csp = res.headers.get('content-security-policy') ?? ''
  for (const directive of [
    "default-src 'self'",
    "img-src 'self' data:",
    "script-src 'self'",
    "style-src 'self'",
    "frame-ancestors 'none'",
    "base-uri 'none'",
    "form-action 'self'",
    "object-src 'none'",
  ]) {
    expect(csp).toContain(directive)
  }
  expect(csp).not.toContain('unsafe-inline')
  expect(res.headers.get('x-frame-options')).toBe('DENY')
  expect(res.headers.get('referrer-policy')).toBe('strict-origin-when-cross-origin')
  expect(res.headers.get('x-content-type-options')).toBe('nosniff')
  expect(res.headers.get('content-type')).toBe('text/html; charset=utf-8')
}

/** No inline script or style, no event handler attribute, every script and stylesheet local. */
function expectNoInlineCode(doc: HTMLElement) {
  for (const script of doc.querySelectorAll('script')) {
    expect(script.getAttribute('src')).toMatch(/^\/assets\/[a-z0-9.-]+\.js\?v=[0-9a-f]+$/)
    expect(script.innerHTML.trim()).toBe('')
  }
  expect(doc.querySelectorAll('style')).toHaveLength(0)
  for (const link of doc.querySelectorAll('link[rel="stylesheet"]'))
    expect(link.getAttribute('href')).toMatch(/^\/assets\//)
  for (const el of doc.querySelectorAll('*')) {
    for (const name of Object.keys(el.attributes)) {
      expect(name.toLowerCase().startsWith('on')).toBe(false)
      expect(name.toLowerCase()).not.toBe('style')
    }
  }
}

describe('viewer page /i/<id>', () => {
  test('the head carries every tag with the defaults when no profile is assigned', async () => {
    const { res, doc, meta, all } = await page(`/i/${plain.id}`)
    expect(res.status).toBe(200)
    expectSecurityHeaders(res)
    const description = `120×80 · ${humanSize(plain.size)}`
    expect(doc.querySelector('title')?.text).toBe('beach.png')
    expect(meta('og:title')).toBe('beach.png')
    expect(meta('og:description')).toBe(description)
    expect(meta('og:site_name')).toBe('Pixbin')
    expect(meta('og:url')).toBe(plain.viewer)
    expect(meta('og:image')).toBe(plain.url)
    expect(meta('og:image:width')).toBe('120')
    expect(meta('og:image:height')).toBe('80')
    expect(meta('theme-color')).toBe('#112233')
    expect(meta('twitter:card')).toBe('summary_large_image')
    expect(all('robots')).toHaveLength(0)
    const alternates = doc.querySelectorAll('link[rel="alternate"][type="application/json+oembed"]')
    expect(alternates).toHaveLength(1)
    expect(alternates[0].getAttribute('href')).toBe(`${t.url}/api/oembed?url=${encodeURIComponent(plain.viewer)}`)
    expect(plain.viewer).toBe(`${t.url}/i/${plain.id}`)
  })

  test('the body shows the image, its size and date, share codes with copy buttons and the uploader', async () => {
    const { doc } = await page(`/i/${plain.id}`)
    const img = doc.querySelector('main img')!
    expect(img.getAttribute('src')).toBe(plain.url)
    expect(img.getAttribute('alt')).toBe('beach.png')
    expect(doc.querySelector('h1')?.text).toBe('beach.png')
    const text = doc.querySelector('main')!.text
    expect(text).toContain(humanSize(plain.size))
    expect(text).toContain('120 × 80')
    expect(doc.querySelector('time')?.getAttribute('datetime')).toMatch(/^\d{4}-\d{2}-\d{2}T/)

    const code = (id: string) => doc.querySelector(`#${id}`)?.getAttribute('value')
    expect(code('code-direct')).toBe(plain.url)
    expect(code('code-viewer')).toBe(plain.viewer)
    expect(code('code-markdown')).toBe(`[![beach.png](${plain.url})](${plain.viewer})`)
    expect(code('code-bbcode')).toBe(`[url=${plain.viewer}][img]${plain.url}[/img][/url]`)
    expect(code('code-html')).toBe(`<a href="${plain.viewer}"><img src="${plain.url}" alt="beach.png"></a>`)
    const targets = doc.querySelectorAll('button[data-copy]').map((b) => b.getAttribute('data-copy'))
    expect(targets.sort()).toEqual(['code-bbcode', 'code-direct', 'code-html', 'code-markdown', 'code-viewer'])

    const uploader = doc.querySelector('a.uploader')!
    expect(uploader.getAttribute('href')).toBe(`/u/${owner.user.username}`)
    expect(uploader.text).toBe(owner.user.username)
    expectNoInlineCode(doc)
  })

  test('a TIFF: the direct link is the original, the embedding codes show its JPEG preset, which browsers read', async () => {
    const tiff = await uploadImage(
      t,
      owner.keyHeader,
      {},
      {
        bytes: await makeImage('tiff', 200, 150, 41),
        name: 'scan.tiff',
      },
    )
    expect(tiff.url).toEndWith('.tiff')
    const { doc } = await page(`/i/${tiff.id}`)
    const code = (id: string) => doc.querySelector(`#${id}`)?.getAttribute('value')
    const preset = `${t.url}/cdn/large/${tiff.id}.jpg`
    expect(code('code-direct')).toBe(tiff.url)
    expect(code('code-markdown')).toBe(`[![scan.tiff](${preset})](${tiff.viewer})`)
    expect(code('code-bbcode')).toBe(`[url=${tiff.viewer}][img]${preset}[/img][/url]`)
    expect(code('code-html')).toBe(`<a href="${tiff.viewer}"><img src="${preset}" alt="scan.tiff"></a>`)
    const shown = await t.fetch(new URL(preset).pathname)
    expect(shown.status).toBe(200)
    expect(shown.headers.get('content-type')).toBe('image/jpeg')
  })

  test('anonymous uploads have no uploader link', async () => {
    const up = await t.json('/api/upload', {
      method: 'POST',
      body: uploadForm([{ bytes: await makeImage('png', 20, 20, 99), name: 'anon.png' }]),
    })
    expect(up.status).toBe(201)
    const { doc } = await page(`/i/${up.body.id}`)
    expect(doc.querySelector('a.uploader')).toBeNull()
    expect(doc.querySelectorAll('a').some((a) => (a.getAttribute('href') ?? '').startsWith('/u/'))).toBe(false)
  })

  test('a real unfurler (open-graph-scraper over HTTP) reads title, description, image and site name', async () => {
    const result = await unfurl(plain.viewer)
    expect(result.ogTitle).toBe('beach.png')
    expect(result.ogDescription).toBe(`120×80 · ${humanSize(plain.size)}`)
    expect(result.ogSiteName).toBe('Pixbin')
    expect(result.ogUrl).toBe(plain.viewer)
    expect(result.ogImage?.[0]?.url).toBe(plain.url)
    expect(String(result.ogImage?.[0]?.width)).toBe('120')
    expect(String(result.ogImage?.[0]?.height)).toBe('80')
    expect(result.twitterCard).toBe('summary_large_image')
    // The image it would show is really there.
    const image = await t.fetch(new URL(result.ogImage![0].url).pathname)
    expect(image.status).toBe(200)
    expect(image.headers.get('content-type')).toBe('image/png')
  })

  test('every page load counts a view', async () => {
    const image = await uploadImage(t, owner.keyHeader)
    const before = (await t.json(`/api/v1/image/${image.id}`)).body.data.views
    await t.fetch(`/i/${image.id}`)
    await t.fetch(`/i/${image.id}`)
    await t.fetch(`/i/${image.id}`)
    expect((await t.json(`/api/v1/image/${image.id}`)).body.data.views).toBe(before + 3)
    const { doc } = await page(`/i/${image.id}`)
    expect(doc.querySelector('main')!.text).toContain('Views4')
  })

  test('NSFW: blurred behind a warning with a reveal button, and no og:image', async () => {
    const image = await uploadImage(t, owner.keyHeader, { nsfw: 'true' })
    const { res, doc, meta, all } = await page(`/i/${image.id}`)
    expect(res.status).toBe(200)
    for (const key of ['og:image', 'og:image:width', 'og:image:height', 'og:image:type', 'twitter:image'])
      expect(all(key)).toHaveLength(0)
    expect(meta('og:title')).toBeDefined()
    expect(meta('twitter:card')).toBe('summary')
    expect(meta('robots')).toBe('noindex')
    const figure = doc.querySelector('figure.nsfw')!
    expect(figure.classList.contains('is-hidden')).toBe(true)
    expect(figure.querySelector('.nsfw-warning')!.text).toContain('NSFW')
    expect(figure.querySelector('button[data-reveal]')).not.toBeNull()
    // The picture is loaded by script only (blurred thumbnail first, the original on reveal)...
    const img = figure.querySelector('img')!
    expect(img.getAttribute('src')).toBeUndefined()
    expect(img.getAttribute('data-preview')).toBe(image.thumbnail)
    expect(img.getAttribute('data-src')).toBe(image.url)
    // ...so not even an unfurler that falls back to the page's <img> tags finds an image to show.
    expect(doc.querySelectorAll('img[src]')).toHaveLength(0)
    const result = await unfurl(image.viewer)
    expect(result.ogImage ?? []).toHaveLength(0)
    expect(result.twitterImage ?? []).toHaveLength(0)
    const oembed = await t.json(`/api/oembed?url=${encodeURIComponent(image.viewer)}`)
    expect(oembed.status).toBe(200)
    expect(oembed.body.type).toBe('link')
    expect(oembed.body.url).toBeUndefined()
    expect(JSON.stringify(oembed.body)).not.toContain('/cdn/')
  })

  test("a private image's page carries noindex; a public one does not", async () => {
    const image = await uploadImage(t, owner.keyHeader, { visibility: 'private' })
    const { res, all } = await page(`/i/${image.id}`)
    expect(res.status).toBe(200)
    const robots = all('robots')
    expect(robots).toHaveLength(1)
    expect(robots[0].getAttribute('content')).toBe('noindex')
    expect((await page(`/i/${plain.id}`)).all('robots')).toHaveLength(0)
  })

  test('unknown, malformed and deleted ids get the 404 page', async () => {
    const deleted = await uploadImage(t, owner.keyHeader)
    await t.fetch(`/api/v1/image/${deleted.id}`, { method: 'DELETE', headers: owner.keyHeader })
    for (const path of ['/i/ZZZZZZZZ', '/i/short', '/i/%3Cscript%3E', `/i/${deleted.id}`]) {
      const { res, doc, all } = await page(path)
      expect(res.status).toBe(404)
      expectSecurityHeaders(res)
      expect(doc.querySelector('h1')!.text).toContain('Not found')
      expect(all('og:image')).toHaveLength(0)
      expect(all('robots')[0].getAttribute('content')).toBe('noindex')
    }
  })

  test('the local assets are served with their types, and the page loads nothing from another host', async () => {
    const { doc } = await page(`/i/${plain.id}`)
    const urls = [
      ...doc.querySelectorAll('script[src]').map((s) => s.getAttribute('src')!),
      ...doc.querySelectorAll('link[rel="stylesheet"]').map((l) => l.getAttribute('href')!),
    ]
    expect(urls.length).toBeGreaterThanOrEqual(2)
    for (const url of urls) {
      const res = await t.fetch(url)
      expect(res.status).toBe(200)
      expect(res.headers.get('content-type')).toMatch(url.includes('.js') ? /^text\/javascript/ : /^text\/css/)
      expect(res.headers.get('x-content-type-options')).toBe('nosniff')
      expect(res.headers.get('cache-control')).toContain('immutable')
    }
    const css = await (await t.fetch('/assets/site.css')).text()
    // Dark with the system (color-scheme: light dark picks each light-dark() colour), or by the toggle.
    expect(css).toContain('color-scheme: light dark')
    expect(css).toContain('light-dark(')
    expect(css).not.toMatch(/url\(\s*['"]?(https?:)?\/\//)
    expect(css).not.toContain('@import')
    expect((await t.fetch('/assets/../../package.json')).status).toBe(404)
    expect((await t.fetch('/assets/nope.js')).status).toBe(404)
  })
})

describe('hostile input is escaped everywhere', () => {
  test.each(HOSTILE_FILENAMES)('a hostile filename in the body and in meta tags: %s', async (name) => {
    const image = await uploadImage(t, owner.keyHeader, {}, { name })
    const { text, doc, meta } = await page(`/i/${image.id}`)
    const filename = image.filename
    expect(filename).toContain('>')
    expect(filename).toContain('{{7*7}}')
    expect(text).not.toContain('<script>alert(1)')
    expect(text).not.toContain('<img src=x')
    expect(text).toContain('{{7*7}}') // left as text: nothing evaluates templates
    expect(meta('og:title')).toBe(filename)
    expect(doc.querySelector('title')!.text).toBe(filename)
    expect(doc.querySelector('h1')!.text).toBe(filename)
    expect(doc.querySelector('main img')!.getAttribute('alt')).toBe(filename)
    expect(doc.querySelector('#code-markdown')!.getAttribute('value')).toContain(filename)
    expect(doc.querySelector('#code-html')!.getAttribute('value')).toContain(`alt="${escapeHtml(filename)}"`)
    expect(doc.querySelectorAll('img[onerror]')).toHaveLength(0)
    expect(doc.querySelectorAll('script').every((s) => s.getAttribute('src')?.startsWith('/assets/'))).toBe(true)
    expectNoInlineCode(doc)
    const result = await unfurl(image.viewer)
    expect(result.ogTitle).toBe(filename)
  })

  test('hostile profile text in meta tags, the body and oEmbed', async () => {
    const image = await uploadImage(t, owner.keyHeader)
    const hostile = {
      name: '<b>n</b>',
      title: `</title><script>alert("t")</script>{{7*7}}`,
      description: `" onmouseover="alert(1)" x="' <svg onload=alert(2)>`,
      site_name: "{{constructor.constructor('alert(3)')()}}</meta>",
      author_name: '<script>alert(4)</script>',
      author_url: 'https://example.com/"><script>alert(5)</script>',
    }
    const created = await t.json('/api/embeds', send('POST', hostile, owner.bearer))
    expect(created.status).toBe(201)
    await t.json(
      `/api/images/${image.id}/embed`,
      send('PATCH', { embed_profile_id: created.body.profile.id }, owner.bearer),
    )

    const { text, doc, meta } = await page(`/i/${image.id}`)
    expect(text).not.toMatch(/<script>alert/)
    expect(text).not.toContain('<svg onload')
    expect(text).not.toContain('onmouseover="alert')
    expect(meta('og:title')).toBe(hostile.title)
    expect(doc.querySelector('title')!.text).toBe(hostile.title)
    expect(meta('og:description')).toBe(hostile.description)
    expect(meta('description')).toBe(hostile.description)
    expect(meta('og:site_name')).toBe(hostile.site_name)
    expect(doc.querySelector('link[rel="alternate"]')!.getAttribute('title')).toBe(hostile.title)
    expectNoInlineCode(doc)

    const result = await unfurl(image.viewer)
    expect(result.ogTitle).toBe(hostile.title)
    expect(result.ogDescription).toBe(hostile.description)
    expect(result.ogSiteName).toBe(hostile.site_name)

    const oembed = await t.json(`/api/oembed?url=${encodeURIComponent(image.viewer)}`)
    expect(oembed.headers.get('content-type')).toContain('application/json')
    expect(oembed.body).toMatchObject({
      title: hostile.title,
      author_name: hostile.author_name,
      provider_name: hostile.site_name,
    })
  })
})

describe('oEmbed', () => {
  test('discovered from the page, it answers a photo with the documented fields', async () => {
    const { doc } = await page(`/i/${plain.id}`)
    const href = doc.querySelector('link[rel="alternate"][type="application/json+oembed"]')!.getAttribute('href')!
    const res = await t.json(new URL(href).pathname + new URL(href).search)
    expect(res.status).toBe(200)
    expect(res.body).toEqual({
      version: '1.0',
      type: 'photo',
      url: plain.url,
      width: 120,
      height: 80,
      title: 'beach.png',
      provider_name: 'Pixbin',
      provider_url: t.url,
      thumbnail_url: plain.thumbnail.replace(/\.webp$/, '.jpg'),
      thumbnail_width: 120,
      thumbnail_height: 80,
    })
    // The thumbnail as a JPEG, which every consumer reads (the thumbnail itself is WebP).
    const thumb = await t.fetch(new URL(res.body.thumbnail_url).pathname)
    expect(thumb.status).toBe(200)
    expect(thumb.headers.get('content-type')).toBe('image/jpeg')
  })

  test('author fields only when the profile sets them; provider is the site name in force', async () => {
    const image = await uploadImage(t, owner.keyHeader)
    const profile = await t.json(
      '/api/embeds',
      send(
        'POST',
        { name: 'auth', author_name: 'Ann', author_url: 'https://ann.example/', site_name: 'Ann Site' },
        owner.bearer,
      ),
    )
    await t.json(
      `/api/images/${image.id}/embed`,
      send('PATCH', { embed_profile_id: profile.body.profile.id }, owner.bearer),
    )
    const res = await t.json(`/api/oembed?url=${encodeURIComponent(image.viewer)}&format=json`)
    expect(res.body).toMatchObject({
      author_name: 'Ann',
      author_url: 'https://ann.example/',
      provider_name: 'Ann Site',
      title: image.filename,
    })
    const none = await t.json(`/api/oembed?url=${encodeURIComponent(plain.viewer)}`)
    expect('author_name' in none.body).toBe(false)
    expect('author_url' in none.body).toBe(false)
  })

  test('anything that is not one of our viewer links is a 404 { error }', async () => {
    for (const url of [
      `${t.url}/i/ZZZZZZZZ`,
      plain.url,
      `${t.url}/a/${plain.id}`,
      `https://evil.example/i/${plain.id}`,
      `${t.url.replace('localhost', '127.0.0.1')}/i/${plain.id}`,
      `${t.url}/i/${plain.id}/extra`,
      'not a url',
      'javascript:alert(1)',
    ]) {
      const res = await t.json(`/api/oembed?url=${encodeURIComponent(url)}`)
      expect({ url, status: res.status }).toEqual({ url, status: 404 })
      expect(typeof res.body.error).toBe('string')
    }
    const missing = await t.json('/api/oembed')
    expect(missing.status).toBe(400)
    expect(typeof missing.body.error).toBe('string')
    const xml = await t.json(`/api/oembed?url=${encodeURIComponent(plain.viewer)}&format=xml`)
    expect(xml.status).toBe(501)
  })

  test('is documented in /swagger/json; the HTML pages are not', async () => {
    const doc = (await t.json('/swagger/json')).body
    const op = doc.paths['/api/oembed']?.get
    expect(op).toBeDefined()
    expect(op.responses['200']).toBeDefined()
    expect(op.responses['404']).toBeDefined()
    expect(op.parameters.some((p: any) => p.name === 'url' && p.in === 'query')).toBe(true)
    for (const path of Object.keys(doc.paths)) expect(path).toMatch(/^\/(api|healthz)/)
  })
})

describe('Content-Security-Policy', () => {
  test('img-src adds the CDN origin only when it differs', () => {
    expect(contentSecurityPolicy({ publicUrl: 'https://img.example', cdnUrl: 'https://img.example' })).toContain(
      "img-src 'self' data:;",
    )
    expect(contentSecurityPolicy({ publicUrl: 'https://img.example', cdnUrl: 'https://cdn.example/bucket' })).toContain(
      "img-src 'self' data: https://cdn.example;",
    )
  })
})
