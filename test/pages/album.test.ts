import { afterAll, beforeAll, describe, expect, test } from 'bun:test'
import { parse } from 'node-html-parser'
import ogs from 'open-graph-scraper'
import { ALBUM_PAGE_SIZE } from '../../src/modules/pages/album'
import { type TestServer, userWithKey } from '../helpers'
import { send, startServer, uploadImage } from './support'

let t: TestServer
let owner: Awaited<ReturnType<typeof userWithKey>>

beforeAll(async () => {
  t = await startServer({ SITE_NAME: 'Pixbin' })
  owner = await userWithKey(t)
})
afterAll(() => t.stop())

async function createAlbum(body: Record<string, unknown>) {
  const res = await t.json('/api/albums', send('POST', body, owner.bearer))
  expect(res.status).toBe(201)
  return res.body.album
}

async function addImages(albumId: string, ids: string[]) {
  for (const imageId of ids)
    expect((await t.json(`/api/albums/${albumId}/images`, send('POST', { imageId }, owner.bearer))).status).toBe(200)
}

async function page(path: string, init?: RequestInit) {
  const res = await t.fetch(path, init)
  const text = await res.text()
  const doc = parse(text)
  const meta = (key: string) =>
    doc.querySelector(`meta[property="${key}"]`)?.getAttribute('content') ??
    doc.querySelector(`meta[name="${key}"]`)?.getAttribute('content')
  return { res, text, doc, meta }
}

function expectSecurityHeaders(res: Response) {
  expect(res.headers.get('content-security-policy')).toContain("default-src 'self'")
  expect(res.headers.get('content-security-policy')).toContain("frame-ancestors 'none'")
  expect(res.headers.get('x-frame-options')).toBe('DENY')
  expect(res.headers.get('referrer-policy')).toBe('strict-origin-when-cross-origin')
  expect(res.headers.get('x-content-type-options')).toBe('nosniff')
}

describe('album page /a/<id>', () => {
  test('a public album: a grid of thumbnails linking to viewer pages; NSFW ones blurred; private ones left out', async () => {
    const album = await createAlbum({ title: 'Trip', description: 'Mountains and lakes', isPublic: true })
    const first = await uploadImage(t, owner.keyHeader, {}, { width: 800, height: 400 })
    const nsfw = await uploadImage(t, owner.keyHeader, { nsfw: 'true' })
    const priv = await uploadImage(t, owner.keyHeader, { visibility: 'private' })
    await addImages(album.id, [first.id, nsfw.id, priv.id])

    const { res, doc, meta, text } = await page(`/a/${album.id}`)
    expect(res.status).toBe(200)
    expectSecurityHeaders(res)
    expect(doc.querySelector('h1')!.text).toBe('Trip')
    expect(doc.querySelector('main')!.text).toContain('Mountains and lakes')
    expect(doc.querySelector('main')!.text).toContain(owner.user.username)

    const links = doc.querySelectorAll('.grid a.thumb')
    expect(links.map((a) => a.getAttribute('href'))).toEqual([nsfw.viewer, first.viewer])
    expect(text).not.toContain(priv.id)
    const plainThumb = links[1]
    expect(plainThumb.classList.contains('nsfw-thumb')).toBe(false)
    // The fallback of the tile's <picture> is the medium JPEG preset (test/pages/picture.test.ts has the sources).
    expect(plainThumb.querySelector('img')!.getAttribute('src')).toBe(first.thumbnail.replace(/\.webp$/, '.jpg'))
    expect(plainThumb.querySelector('img')!.getAttribute('width')).toBe('500')
    expect(plainThumb.querySelector('img')!.getAttribute('height')).toBe('250')
    const nsfwThumb = links[0]
    expect(nsfwThumb.classList.contains('nsfw-thumb')).toBe(true)
    expect(nsfwThumb.querySelector('.badge')!.text).toBe('NSFW')
    expect(nsfwThumb.querySelector('img')!.getAttribute('src')).toBeUndefined()
    expect(nsfwThumb.querySelector('img')!.getAttribute('data-preview')).toBe(nsfw.thumbnail)

    expect(meta('og:title')).toBe('Trip')
    expect(meta('og:description')).toBe('Mountains and lakes')
    expect(meta('og:site_name')).toBe('Pixbin')
    expect(meta('og:url')).toBe(`${t.url}/a/${album.id}`)
    // The preview is never a mature image; a PNG is unfurled as it is.
    expect(meta('og:image')).toBe(first.url)
    expect(doc.querySelector('meta[name="robots"]')).toBeNull()

    const { result } = await ogs({
      url: `${t.url}/a/${album.id}`,
      urlValidatorSettings: { require_tld: false, protocols: ['http', 'https'], require_protocol: true } as never,
    })
    expect(result.ogTitle).toBe('Trip')
    expect(result.ogImage?.[0]?.url).toBe(first.url)
  })

  test('an album of only NSFW images has no preview image at all', async () => {
    const album = await createAlbum({ title: 'Mature', isPublic: true })
    const nsfw = await uploadImage(t, owner.keyHeader, { nsfw: 'true' })
    await addImages(album.id, [nsfw.id])
    const { doc, meta } = await page(`/a/${album.id}`)
    expect(meta('og:image')).toBeUndefined()
    expect(doc.querySelectorAll('img[src]')).toHaveLength(0)
  })

  test('an empty public album', async () => {
    const album = await createAlbum({ title: 'Empty', isPublic: true })
    const { res, doc } = await page(`/a/${album.id}`)
    expect(res.status).toBe(200)
    expect(doc.querySelector('main')!.text).toContain('empty')
  })

  test('private, deleted, unknown and malformed albums get the 404 page', async () => {
    const priv = await createAlbum({ title: 'Private' })
    const gone = await createAlbum({ title: 'Gone', isPublic: true })
    await t.fetch(`/api/albums/${gone.id}`, { method: 'DELETE', headers: owner.bearer })
    for (const path of [`/a/${priv.id}`, `/a/${gone.id}`, '/a/ZZZZZZZZ', '/a/x']) {
      const { res, doc, text } = await page(path)
      expect(res.status).toBe(404)
      expectSecurityHeaders(res)
      expect(res.headers.get('content-type')).toBe('text/html; charset=utf-8')
      expect(doc.querySelector('h1')!.text).toContain('Not found')
      expect(text).not.toContain('Private')
    }
  })

  test('a password-protected album: a form first, the album with the right password (query or POST)', async () => {
    const album = await createAlbum({ title: 'Locked Trip', isPublic: true })
    await t.json(`/api/albums/${album.id}`, send('PUT', { password: 'hunter2 hunter2' }, owner.bearer))
    const image = await uploadImage(t, owner.keyHeader)
    await addImages(album.id, [image.id])

    const form = await page(`/a/${album.id}`)
    expect(form.res.status).toBe(200)
    expectSecurityHeaders(form.res)
    expect(form.text).not.toContain('Locked Trip')
    expect(form.text).not.toContain(image.id)
    expect(form.doc.querySelector('meta[name="robots"]')!.getAttribute('content')).toBe('noindex')
    const el = form.doc.querySelector('form.password-form')!
    expect(el.getAttribute('method')).toBe('post')
    expect(el.getAttribute('action')).toBe(`/a/${album.id}`)
    expect(el.querySelector('input[type="password"][name="password"]')).not.toBeNull()

    const wrong = await page(`/a/${album.id}?password=nope`)
    expect(wrong.res.status).toBe(403)
    expect(wrong.doc.querySelector('.error')).not.toBeNull()
    expect(wrong.text).not.toContain('Locked Trip')

    const byQuery = await page(`/a/${album.id}?password=${encodeURIComponent('hunter2 hunter2')}`)
    expect(byQuery.res.status).toBe(200)
    expect(byQuery.doc.querySelector('h1')!.text).toBe('Locked Trip')
    expect(byQuery.doc.querySelector('.grid a')!.getAttribute('href')).toBe(image.viewer)
    expect(byQuery.doc.querySelector('meta[name="robots"]')!.getAttribute('content')).toBe('noindex')

    const posted = await page(`/a/${album.id}`, {
      method: 'POST',
      headers: { 'content-type': 'application/x-www-form-urlencoded' },
      body: new URLSearchParams({ password: 'hunter2 hunter2' }).toString(),
    })
    expect(posted.res.status).toBe(200)
    expect(posted.doc.querySelector('h1')!.text).toBe('Locked Trip')

    const postedWrong = await page(`/a/${album.id}`, {
      method: 'POST',
      headers: { 'content-type': 'application/x-www-form-urlencoded' },
      body: 'password=wrong',
    })
    expect(postedWrong.res.status).toBe(403)
    expect(postedWrong.doc.querySelector('form.password-form')).not.toBeNull()

    const postedMultipart = new FormData()
    postedMultipart.append('password', 'hunter2 hunter2')
    expect((await t.fetch(`/a/${album.id}`, { method: 'POST', body: postedMultipart })).status).toBe(200)
  })

  test('an album longer than a page: the most recently added first, the rest on later pages, the API whole', async () => {
    const album = await createAlbum({ title: 'Big Trip', isPublic: true })
    const uploaded: { id: string; viewer: string }[] = []
    for (let i = 0; i < ALBUM_PAGE_SIZE + 3; i++)
      uploaded.push(await uploadImage(t, owner.keyHeader, {}, { width: 8, height: 8 }))
    await addImages(
      album.id,
      uploaded.map((u) => u.id),
    )
    const newestFirst = uploaded.map((u) => u.viewer).toReversed()
    const shown = (p: Awaited<ReturnType<typeof page>>) =>
      p.doc.querySelectorAll('.grid a.thumb').map((a) => a.getAttribute('href'))

    const first = await page(`/a/${album.id}`)
    expect(first.doc.querySelector('main')!.text).toContain(`${uploaded.length} images`)
    expect(shown(first)).toEqual(newestFirst.slice(0, ALBUM_PAGE_SIZE))
    const next = first.doc.querySelector('.pager a[rel="next"]')!.getAttribute('href')!
    expect(next).toBe(`/a/${album.id}?page=2`)
    const second = await page(next)
    expect(second.res.status).toBe(200)
    expect(shown(second)).toEqual(newestFirst.slice(ALBUM_PAGE_SIZE))
    expect(second.doc.querySelector('.pager a[rel="prev"]')!.getAttribute('href')).toBe(`/a/${album.id}`)
    expect(second.doc.querySelector('.pager a[rel="next"]')).toBeNull()
    for (const bad of ['3', '0', 'x', '-1'])
      expect([bad, (await t.fetch(`/a/${album.id}?page=${bad}`)).status]).toEqual([bad, 404])

    // The API answers the whole album, as the contract says.
    const api = await t.json(`/api/albums/${album.id}`)
    expect(api.body.images.map((i: { id: string }) => i.id)).toEqual(uploaded.map((u) => u.id).toReversed())

    // A protected album pages by posting the password again: it never goes into a link.
    const password = 'open "sesame" <now>'
    await t.json(`/api/albums/${album.id}`, send('PUT', { password }, owner.bearer))
    const form = (body: Record<string, string>) => ({
      method: 'POST',
      headers: { 'content-type': 'application/x-www-form-urlencoded' },
      body: new URLSearchParams(body).toString(),
    })
    const locked = await page(`/a/${album.id}`, form({ password }))
    expect(shown(locked)).toEqual(newestFirst.slice(0, ALBUM_PAGE_SIZE))
    expect(locked.doc.querySelector('.pager a')).toBeNull()
    const older = locked.doc.querySelector('.pager form')!
    expect(older.getAttribute('method')).toBe('post')
    expect(older.getAttribute('action')).toBe(`/a/${album.id}?page=2`)
    // Escaped in the markup, the same text once read.
    expect(older.querySelector('input[type="hidden"][name="password"]')!.getAttribute('value')).toBe(password)
    expect(locked.text).not.toContain(password)
    const lockedSecond = await page(`/a/${album.id}?page=2`, form({ password }))
    expect(shown(lockedSecond)).toEqual(newestFirst.slice(ALBUM_PAGE_SIZE))
    expect((await t.fetch(`/a/${album.id}?page=2`, form({ password: 'wrong' }))).status).toBe(403)
  })

  test('a hostile album title and description come out escaped', async () => {
    const title = `</title><script>alert(1)</script>"'{{7*7}}`
    const description = `<img src=x onerror=alert(2)> " onfocus="alert(3)`
    const album = await createAlbum({ title, description, isPublic: true })
    const { text, doc, meta } = await page(`/a/${album.id}`)
    expect(text).not.toContain('<script>alert(1)')
    expect(text).not.toContain('<img src=x')
    expect(text).toContain('{{7*7}}') // left as text: nothing evaluates templates
    expect(doc.querySelector('h1')!.text).toBe(title)
    expect(doc.querySelector('title')!.text).toBe(`${title} · Pixbin`)
    expect(meta('og:title')).toBe(title)
    expect(meta('og:description')).toBe(description)
    expect(doc.querySelectorAll('script').every((s) => s.getAttribute('src')?.startsWith('/assets/'))).toBe(true)
    expect(doc.querySelectorAll('[onerror], [onfocus]')).toHaveLength(0)
  })
})
