import { afterAll, beforeAll, describe, expect, test } from 'bun:test'
import { parse } from 'node-html-parser'
import { makeImage, uploadForm } from '../fixtures'
import { type TestServer, userWithKey } from '../helpers'
import { send, startServer, uploadImage } from '../pages/support'

/** A CDN (or bucket website) in front of /cdn: links must point there, with the /cdn/... path kept. */
const CDN = 'https://img-cdn.example.test/static'

let t: TestServer
let owner: Awaited<ReturnType<typeof userWithKey>>
let image: Awaited<ReturnType<typeof uploadImage>>
let albumId: string

/** Every `/cdn/` in the text is preceded by exactly the CDN base; returns how many there were. */
function expectCdnLinks(text: string): number {
  let found = 0
  for (let at = text.indexOf('/cdn/'); at !== -1; at = text.indexOf('/cdn/', at + 1)) {
    expect(text.slice(Math.max(0, at - CDN.length), at)).toBe(CDN)
    found++
  }
  expect(text).not.toContain(`${t.url}/cdn/`)
  return found
}

beforeAll(async () => {
  t = await startServer({ CDN_URL: `${CDN}/`, SITE_NAME: 'Pixbin' })
  owner = await userWithKey(t)
  image = await uploadImage(t, owner.keyHeader, {}, { name: 'harbour.png', width: 90, height: 60 })
  const album = await t.json('/api/albums', send('POST', { title: 'Harbour', isPublic: true }, owner.bearer))
  albumId = album.body.album.id
  expect(
    (await t.json(`/api/albums/${albumId}/images`, send('POST', { imageId: image.id }, owner.bearer))).status,
  ).toBe(200)
})
afterAll(() => t.stop())

describe('CDN_URL is the base of every direct and thumbnail link', () => {
  test('upload answers (both endpoints)', async () => {
    expect(image.url).toBe(`${CDN}/cdn/${image.id}.png`)
    expect(image.thumbnail).toBe(`${CDN}/cdn/medium/${image.id}.webp`)
    expect(image.viewer).toBe(`${t.url}/i/${image.id}`)

    const api = await t.json('/api/v1/upload', {
      method: 'POST',
      headers: owner.keyHeader,
      body: uploadForm([{ bytes: await makeImage('png', 20, 20, 7) }]),
    })
    expect(api.status).toBe(201)
    expect(expectCdnLinks(JSON.stringify(api.body))).toBeGreaterThanOrEqual(2)
    const web = await t.json('/api/upload', {
      method: 'POST',
      body: uploadForm([{ bytes: await makeImage('png', 20, 20, 8) }]),
    })
    expect(web.status).toBe(201)
    expect(expectCdnLinks(JSON.stringify(web.body))).toBeGreaterThanOrEqual(2)
  })

  test('JSON reads: image, lists, gallery, search, profile, album, oEmbed', async () => {
    const details = await t.json(`/api/v1/image/${image.id}`)
    expect(details.body.data.url).toBe(image.url)
    expect(details.body.data.thumbnail).toBe(image.thumbnail)

    for (const path of [
      '/api/v1/images',
      '/api/images',
      '/api/gallery',
      '/api/search?q=harbour',
      `/api/users/${owner.user.username}`,
      `/api/albums/${albumId}`,
    ]) {
      const res = await t.json(path, { headers: path === '/api/images' ? owner.bearer : owner.keyHeader })
      expect({ path, status: res.status }).toEqual({ path, status: 200 })
      // Each answer lists the image, with its thumbnail at least.
      expect(JSON.stringify(res.body)).toContain(image.thumbnail)
      expectCdnLinks(JSON.stringify(res.body))
    }

    const oembed = await t.json(`/api/oembed?url=${encodeURIComponent(image.viewer)}`)
    expect(oembed.status).toBe(200)
    expect(oembed.body.url).toBe(image.url)
    expect(oembed.body.thumbnail_url).toBe(image.thumbnail.replace(/\.webp$/, '.jpg'))
    expectCdnLinks(JSON.stringify(oembed.body))
  })

  test('pages: viewer (og:image, the picture, share codes), album, gallery, profile', async () => {
    const viewer = await t.fetch(`/i/${image.id}`)
    const html = await viewer.text()
    const doc = parse(html)
    const meta = (key: string) =>
      doc.querySelector(`meta[property="${key}"]`)?.getAttribute('content') ??
      doc.querySelector(`meta[name="${key}"]`)?.getAttribute('content')
    expect(meta('og:image')).toBe(image.url)
    expect(doc.querySelector('main img')!.getAttribute('src')).toBe(image.url)
    expect(expectCdnLinks(html)).toBeGreaterThanOrEqual(3)
    // The page may load images from the CDN's origin, and from nowhere else.
    expect(viewer.headers.get('content-security-policy')).toContain(`img-src 'self' data: ${new URL(CDN).origin}`)

    for (const path of [`/a/${albumId}`, '/gallery', `/u/${owner.user.username}`]) {
      const res = await t.fetch(path)
      expect(res.status).toBe(200)
      const text = await res.text()
      // The tiles' <picture> sources are presets, on the CDN like the thumbnail.
      expect(text).toContain(image.thumbnail.replace('/medium/', '/small/').replace(/\.webp$/, '.avif'))
      expectCdnLinks(text)
    }
  })

  test('the service still serves /cdn itself (the CDN pulls from it)', async () => {
    const res = await t.fetch(new URL(image.url).pathname.replace('/static', ''))
    expect(res.status).toBe(200)
    expect(res.headers.get('content-type')).toBe('image/png')
  })
})
