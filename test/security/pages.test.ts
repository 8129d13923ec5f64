import { afterAll, beforeAll, describe, expect, test } from 'bun:test'
import { makeImage } from '../fixtures'
import { makeAdmin, type TestServer, userWithKey } from '../helpers'
import { send, startServer, uploadImage } from './support'

/** One payload per quoting context: element text, double- and single-quoted attributes, and a template literal. */
const XSS = `"><script>window.__xss=1</script><img src=x onerror="window.__xss=2">'\`<svg onload=alert(1)>`
/** Pieces that must never come out unescaped. */
const DANGEROUS = ['<script>window.__xss', '<img src=x onerror', 'onerror="window.__xss', '<svg onload']

let t: TestServer
let owner: Awaited<ReturnType<typeof userWithKey>>
let image: Awaited<ReturnType<typeof uploadImage>>
let nsfwImage: Awaited<ReturnType<typeof uploadImage>>
let album: { id: string }
let lockedAlbum: { id: string }

beforeAll(async () => {
  t = await startServer()
  // Usernames are restricted to [A-Za-z0-9_-], so the closest a name gets to markup is a dash or underscore.
  owner = await userWithKey(t, 'x-_-user')
  await makeAdmin(t, owner.user.id)
  image = await uploadImage(t, owner.keyHeader, {}, { bytes: await makeImage('png', 30, 20, 5), name: `${XSS}.png` })
  nsfwImage = await uploadImage(
    t,
    owner.keyHeader,
    { nsfw: 'true' },
    { bytes: await makeImage('png', 30, 20, 6), name: `${XSS}-nsfw.png` },
  )
  album = (await t.json('/api/albums', send('POST', { title: XSS, description: XSS, isPublic: true }, owner.bearer)))
    .body.album
  for (const id of [image.id, nsfwImage.id]) {
    expect((await t.json(`/api/albums/${album.id}/images`, send('POST', { imageId: id }, owner.bearer))).status).toBe(
      200,
    )
  }
  lockedAlbum = (await t.json('/api/albums', send('POST', { title: XSS, isPublic: true }, owner.bearer))).body.album
  await t.json(`/api/albums/${lockedAlbum.id}`, send('PUT', { password: 'secret password' }, owner.bearer))
  const profile = await t.json(
    '/api/embeds',
    send(
      'POST',
      {
        name: XSS,
        title: `${XSS} {filename} {username}`,
        description: `${XSS} {filename}`,
        author_name: XSS,
        site_name: XSS,
        author_url: 'https://example.com/"><script>window.__xss=3</script>',
        color: '#123456',
      },
      owner.bearer,
    ),
  )
  expect(profile.status).toBe(201)
  expect(
    (
      await t.json(
        `/api/images/${image.id}/embed`,
        send('PATCH', { embed_profile_id: profile.body.profile.id }, owner.bearer),
      )
    ).status,
  ).toBe(200)
})
afterAll(() => t.stop())

/** Every server-rendered page, with user strings in it wherever the page shows them. */
const pages = () => [
  `/i/${image.id}`,
  `/i/${nsfwImage.id}`,
  `/a/${album.id}`,
  `/a/${lockedAlbum.id}`,
  `/a/${lockedAlbum.id}?password=wrong`,
  '/gallery',
  `/gallery?q=${encodeURIComponent(XSS)}`,
  `/gallery?q=${encodeURIComponent('script window')}`,
  `/u/${owner.user.username}`,
  '/',
  '/login',
  '/register',
  '/verify',
  '/forgot',
  '/reset',
  `/reset?token=${encodeURIComponent(XSS)}`,
  `/register?invite=${encodeURIComponent(XSS)}`,
  '/dashboard',
  '/admin/reports',
  '/admin/blocks',
  '/i/zzzzzzzz',
  `/i/${encodeURIComponent(XSS)}`,
  `/a/${encodeURIComponent(XSS)}`,
  `/u/${encodeURIComponent(XSS)}`,
]

describe('HTML escaping of every user string on every page', () => {
  test('no payload comes out unescaped; the escaped form is there where the value is shown', async () => {
    for (const path of pages()) {
      const res = await t.fetch(path)
      const body = await res.text()
      expect(res.status, path).toBeLessThan(500)
      if (!(res.headers.get('content-type') ?? '').startsWith('text/html')) continue
      for (const piece of DANGEROUS) expect(body.includes(piece), `${path} contains ${piece}`).toBe(false)
      expect(body.includes('<script>window.__xss=3'), `${path}: author_url`).toBe(false)
      // Pages carry no inline script at all: every <script> loads a local file.
      for (const tag of body.match(/<script\b[^>]*>/g) ?? [])
        expect(tag, path).toMatch(/^<script src="\/assets\/[^"]+"( defer)?><?/)
    }
    // The values are rendered (escaped), not silently dropped.
    const escaped = '&lt;script&gt;window.__xss=1&lt;/script&gt;'
    for (const path of [`/i/${image.id}`, `/a/${album.id}`])
      expect(await (await t.fetch(path)).text(), path).toContain(escaped)
    expect(await (await t.fetch(`/gallery?q=${encodeURIComponent(XSS)}`)).text()).toContain('&lt;script&gt;')
  })

  test('the viewer head (Open Graph, oEmbed link) escapes the profile texts and the filename placeholders', async () => {
    const body = await (await t.fetch(`/i/${image.id}`)).text()
    const head = body.slice(0, body.indexOf('</head>'))
    for (const piece of DANGEROUS) expect(head.includes(piece)).toBe(false)
    // Every attribute value in the head is one well-formed quoted string: no payload closed one early.
    for (const meta of head.match(/<meta [^>]*>/g) ?? []) expect(meta, meta).toMatch(/^<meta( [a-z:-]+="[^"<>]*")+>$/)
    // oEmbed is JSON: the strings come back verbatim, for the consumer to escape.
    const oembed = await t.json(`/api/oembed?url=${encodeURIComponent(image.viewer)}`)
    expect(oembed.status).toBe(200)
    expect(oembed.headers.get('content-type')).toContain('application/json')
  })

  test('an embed profile refuses a javascript: (or any non-http) author_url', async () => {
    for (const url of [
      'javascript:alert(1)',
      'JaVaScRiPt:alert(1)',
      'data:text/html,<script>alert(1)</script>',
      'vbscript:x',
      '//evil.example',
      'file:///etc/passwd',
    ]) {
      const res = await t.json('/api/embeds', send('POST', { name: 'x', author_url: url }, owner.bearer))
      expect(`${url} ${res.status}`).toBe(`${url} 400`)
    }
  })
})

describe('security headers on pages', () => {
  test('every page: a CSP without inline scripts, framing refused, a referrer policy, nosniff', async () => {
    for (const path of [...pages(), '/swagger']) {
      const res = await t.fetch(path)
      await res.arrayBuffer()
      if (!(res.headers.get('content-type') ?? '').startsWith('text/html')) continue
      const csp = res.headers.get('content-security-policy') ?? ''
      expect(csp, `${path} CSP`).toContain("default-src 'self'")
      const scriptSrc =
        csp
          .split(';')
          .map((d) => d.trim())
          .find((d) => d.startsWith('script-src')) ?? ''
      expect(scriptSrc, path).not.toContain("'unsafe-inline'")
      expect(scriptSrc, path).not.toContain("'unsafe-eval'")
      expect(scriptSrc, path).not.toContain('*')
      const framing = res.headers.get('x-frame-options') === 'DENY' || csp.includes("frame-ancestors 'none'")
      expect(framing, `${path} framing`).toBe(true)
      expect(csp, path).toContain("frame-ancestors 'none'")
      expect(res.headers.get('x-frame-options'), path).toBe('DENY')
      expect(res.headers.get('referrer-policy'), path).toMatch(
        /^(no-referrer|same-origin|strict-origin|strict-origin-when-cross-origin)$/,
      )
      expect(res.headers.get('x-content-type-options'), path).toBe('nosniff')
      expect(csp, path).toContain("object-src 'none'")
      expect(csp, path).toContain("base-uri 'none'")
    }
  })

  test('private images are noindex; the password page does not reveal the album title', async () => {
    const priv = await uploadImage(t, owner.keyHeader, { visibility: 'private' })
    expect(await (await t.fetch(`/i/${priv.id}`)).text()).toContain('<meta name="robots" content="noindex">')
    const locked = await (await t.fetch(`/a/${lockedAlbum.id}`)).text()
    expect(locked).not.toContain('&lt;script&gt;window.__xss=1')
  })
})
