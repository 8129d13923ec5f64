import { afterAll, beforeAll, describe, expect, test } from 'bun:test'
import { type HTMLElement, parse } from 'node-html-parser'
import sharp from 'sharp'
import { type Bytes, makeAnimatedGif, makeImage, svgImage } from '../fixtures'
import { type TestServer, userWithKey } from '../helpers'
import { send, startServer, uploadImage } from './support'

let t: TestServer
let owner: Awaited<ReturnType<typeof userWithKey>>

beforeAll(async () => {
  t = await startServer()
  owner = await userWithKey(t)
})
afterAll(() => t.stop())

type Uploaded = Awaited<ReturnType<typeof uploadImage>>

const upload = (bytes: Bytes, name: string, fields: Record<string, string> = {}) =>
  uploadImage(t, owner.keyHeader, fields, { bytes, name })

/** A preset's link, derived from the upload answer's thumbnail (the medium WebP preset). */
const preset = (image: Uploaded, name: 'small' | 'medium' | 'large', format: string) =>
  image.thumbnail.replace('/medium/', `/${name}/`).replace(/\.webp$/, `.${format}`)

async function page(path: string) {
  const res = await t.fetch(path)
  expect(res.status).toBe(200)
  const doc = parse(await res.text())
  const meta = (key: string) => doc.querySelector(`meta[property="${key}"]`)?.getAttribute('content')
  return { doc, meta }
}

/** A `srcset` as its entries: URL and width descriptor. */
const srcsetOf = (el: HTMLElement) =>
  el
    .getAttribute('srcset')!
    .split(', ')
    .map((entry) => {
      const [url, descriptor] = entry.split(' ')
      expect(descriptor).toMatch(/^\d+w$/)
      return { url, width: Number.parseInt(descriptor, 10) }
    })

/** The `<source>`s of a `<picture>` as type -> srcset entries, in document order. */
const sourcesOf = (picture: HTMLElement) =>
  picture.querySelectorAll('source').map((source) => ({ type: source.getAttribute('type'), srcset: srcsetOf(source) }))

async function fetchImage(url: string) {
  const res = await t.fetch(url.slice(t.url.length))
  expect(res.status).toBe(200)
  const meta = await sharp(new Uint8Array(await res.arrayBuffer()), { pages: -1 }).metadata()
  return { type: res.headers.get('content-type'), width: meta.width, height: meta.pageHeight ?? meta.height, meta }
}

describe('viewer page: <picture> from the presets', () => {
  test('a large PNG: AVIF then WebP sources listing every preset at its real width; the original as the eager fallback', async () => {
    const image = await upload(await makeImage('png', 2000, 1000, 1), 'wide.png')
    const { doc, meta } = await page(`/i/${image.id}`)
    const picture = doc.querySelector('figure.viewer picture')!
    const sources = sourcesOf(picture)
    expect(sources.map((s) => s.type)).toEqual(['image/avif', 'image/webp'])
    for (const [i, format] of ['avif', 'webp'].entries()) {
      expect(sources[i].srcset).toEqual([
        { url: preset(image, 'small', format), width: 320 },
        { url: preset(image, 'medium', format), width: 500 },
        { url: preset(image, 'large', format), width: 1280 },
      ])
      // Each width descriptor is the width of the file it names.
      for (const entry of sources[i].srcset) {
        const file = await fetchImage(entry.url)
        expect(file.type).toBe(`image/${format}`)
        expect(file.width).toBe(entry.width)
      }
    }
    for (const source of picture.querySelectorAll('source')) expect(source.getAttribute('sizes')).toBeTruthy()

    // The main image is the page's largest paint: fetched at once and first, with its size reserved.
    const img = picture.querySelector('img')!
    expect(img.getAttribute('src')).toBe(image.url)
    expect(img.getAttribute('width')).toBe('2000')
    expect(img.getAttribute('height')).toBe('1000')
    expect(img.getAttribute('loading')).toBe('eager')
    expect(img.getAttribute('fetchpriority')).toBe('high')
    expect(img.getAttribute('alt')).toBe('wide.png')

    // A PNG unfurls as it is.
    expect(meta('og:image')).toBe(image.url)
    expect(meta('og:image:type')).toBe('image/png')
    expect(meta('og:image:width')).toBe('2000')
    expect(meta('og:image:height')).toBe('1000')
  })

  test('no width above the original: a smaller image lists the presets up to its own size', async () => {
    const jpeg = await upload(await makeImage('jpeg', 400, 300, 2), 'small.jpg')
    const { doc, meta } = await page(`/i/${jpeg.id}`)
    for (const source of sourcesOf(doc.querySelector('figure.viewer picture')!))
      expect(source.srcset.map((s) => [s.url.split('/cdn/')[1].split('/')[0], s.width])).toEqual([
        ['small', 320],
        ['medium', 400],
      ])
    // The medium preset is the original's size (never enlarged), as its descriptor says.
    expect((await fetchImage(preset(jpeg, 'medium', 'avif'))).width).toBe(400)
    expect(meta('og:image')).toBe(jpeg.url)
    expect(meta('og:image:type')).toBe('image/jpeg')

    const tiny = await upload(await makeImage('png', 200, 100, 3), 'tiny.png')
    const tinyPage = await page(`/i/${tiny.id}`)
    for (const source of sourcesOf(tinyPage.doc.querySelector('figure.viewer picture')!))
      expect(source.srcset.map((s) => s.width)).toEqual([200])

    // A very tall, narrow image is as wide in two presets: each width is named once (the larger preset).
    const narrow = await upload(await makeImage('png', 5, 3000, 4), 'narrow.png')
    const narrowPage = await page(`/i/${narrow.id}`)
    for (const source of sourcesOf(narrowPage.doc.querySelector('figure.viewer picture')!))
      expect(source.srcset.map((s) => [s.url.split('/cdn/')[1].split('/')[0], s.width])).toEqual([
        ['medium', 1],
        ['large', 2],
        // The large preset still is not the whole original: nothing larger is offered.
      ])
  })

  test('originals unfurlers may not read (WebP, AVIF, SVG, TIFF) unfurl as the large JPEG preset, at its real size', async () => {
    const webp = await upload(await makeImage('webp', 900, 600, 5), 'photo.webp')
    const avif = await upload(await makeImage('avif', 640, 480, 6), 'photo.avif')
    const svg = await upload(svgImage(120, 80), 'drawing.svg')
    const tiff = await upload(await makeImage('tiff', 1600, 1200, 7), 'scan.tiff')
    for (const [image, size] of [
      [webp, [900, 600]],
      [avif, [640, 480]],
      [svg, [120, 80]],
      [tiff, [1280, 960]],
    ] as const) {
      const { meta } = await page(`/i/${image.id}`)
      expect(meta('og:image')).toBe(preset(image, 'large', 'jpg'))
      expect(meta('og:image:type')).toBe('image/jpeg')
      expect([meta('og:image:width'), meta('og:image:height')]).toEqual(size.map(String))
      const file = await fetchImage(meta('og:image')!)
      expect(file.type).toBe('image/jpeg')
      expect([file.width, file.height]).toEqual([...size])
      // oEmbed consumers embed `url` as it is: the same file.
      const oembed = await t.json(`/api/oembed?url=${encodeURIComponent(image.viewer)}`)
      expect([oembed.body.url, oembed.body.width, oembed.body.height]).toEqual([meta('og:image'), ...size])
    }
  })

  test('an original browsers cannot show (TIFF, like HEIC) is never an <img> src: its large JPEG preset is', async () => {
    const tiff = await upload(await makeImage('tiff', 1600, 1200, 8), 'scan.tiff')
    const { doc } = await page(`/i/${tiff.id}`)
    const picture = doc.querySelector('figure.viewer picture')!
    expect(sourcesOf(picture).map((s) => s.type)).toEqual(['image/avif', 'image/webp'])
    const img = picture.querySelector('img')!
    expect(img.getAttribute('src')).toBe(preset(tiff, 'large', 'jpg'))
    // The box keeps the original's proportions (the stored size).
    expect([img.getAttribute('width'), img.getAttribute('height')]).toEqual(['1600', '1200'])
    expect(doc.querySelectorAll('img[src]').map((el) => el.getAttribute('src'))).not.toContain(tiff.url)
    // The link around it still opens the original file.
    expect(doc.querySelector('figure.viewer a')!.getAttribute('href')).toBe(tiff.url)

    // A mature one reveals the same JPEG, not the original.
    const mature = await upload(await makeImage('tiff', 600, 400, 9), 'mature.tiff', { nsfw: 'true' })
    const maturePage = await page(`/i/${mature.id}`)
    expect(maturePage.doc.querySelector('figure.nsfw img')!.getAttribute('data-src')).toBe(
      preset(mature, 'large', 'jpg'),
    )
  })

  test('animations and SVGs: the viewer shows the original itself; a GIF unfurls as it is', async () => {
    const gif = await upload(await makeAnimatedGif(300, 200, 3), 'loop.gif')
    const gifPage = await page(`/i/${gif.id}`)
    expect(gifPage.doc.querySelector('figure.viewer picture')).toBeNull()
    const gifImg = gifPage.doc.querySelector('figure.viewer img')!
    expect(gifImg.getAttribute('src')).toBe(gif.url)
    expect(gifImg.getAttribute('fetchpriority')).toBe('high')
    expect(gifPage.meta('og:image')).toBe(gif.url)
    expect(gifPage.meta('og:image:type')).toBe('image/gif')

    const webp = await upload(await makeImage('webp', 300, 200, 10), 'maybe-animated.webp')
    const webpPage = await page(`/i/${webp.id}`)
    expect(webpPage.doc.querySelector('figure.viewer picture')).toBeNull()
    expect(webpPage.doc.querySelector('figure.viewer img')!.getAttribute('src')).toBe(webp.url)

    const svg = await upload(svgImage(120, 80), 'vector.svg')
    const svgPage = await page(`/i/${svg.id}`)
    expect(svgPage.doc.querySelector('figure.viewer picture')).toBeNull()
    const svgImg = svgPage.doc.querySelector('figure.viewer img')!
    expect(svgImg.getAttribute('src')).toBe(svg.url)
    expect([svgImg.getAttribute('width'), svgImg.getAttribute('height')]).toEqual(['120', '80'])
  })
})

describe('grids: gallery, profile and album tiles', () => {
  /** Checks one tile against its image: sources, widths, fallback, reserved size; returns its <img>. */
  function expectTile(tile: HTMLElement, image: Uploaded, formats: string[]) {
    const picture = tile.querySelector('a.thumb picture')!
    const sources = sourcesOf(picture)
    expect(sources.map((s) => s.type)).toEqual(formats.map((f) => `image/${f}`))
    for (const source of sources) {
      const widths = source.srcset.map((s) => s.width)
      expect(Math.max(...widths)).toBeLessThanOrEqual(image.width)
      expect(source.srcset[0].url).toBe(preset(image, 'small', source.type!.slice(6)))
    }
    const img = picture.querySelector('img')!
    expect(img.getAttribute('src')).toBe(preset(image, 'medium', 'jpg'))
    // Sized as the medium preset, the shape the tile shows.
    const scale = Math.min(1, 500 / image.width, 500 / image.height)
    expect(img.getAttribute('width')).toBe(String(Math.round(image.width * scale)))
    expect(img.getAttribute('height')).toBe(String(Math.round(image.height * scale)))
    expect(img.getAttribute('decoding')).toBe('async')
    return img
  }

  test('every tile is a <picture>; the first rows load at once, the rest lazily; GIF and WebP tiles keep their frames', async () => {
    const user = await userWithKey(t, 'tiles')
    const images: Uploaded[] = []
    images.push(await uploadImage(t, user.keyHeader, {}, { bytes: await makeAnimatedGif(300, 200, 3), name: 'a.gif' }))
    images.push(await uploadImage(t, user.keyHeader, {}, { bytes: svgImage(120, 80), name: 'v.svg' }))
    for (let i = 0; i < 6; i++)
      images.push(
        await uploadImage(t, user.keyHeader, {}, { bytes: await makeImage('png', 800 + i, 400, i), name: `p${i}.png` }),
      )
    // Newest first on the profile page.
    const shown = [...images].reverse()
    const { doc } = await page('/u/tiles')
    const tiles = doc.querySelectorAll('.grid li.tile')
    expect(tiles).toHaveLength(shown.length)
    const loading = tiles.map((tile, i) => {
      const image = shown[i]
      const animated = image.filename.endsWith('.gif')
      return expectTile(tile, image, animated ? ['webp'] : ['avif', 'webp']).getAttribute('loading')
    })
    expect(loading).toEqual(['eager', 'eager', 'eager', 'eager', 'eager', 'eager', 'lazy', 'lazy'])

    // The WebP preset of an animated tile has its frames.
    const gifTile = sourcesOf(tiles.at(-1)!.querySelector('picture')!)[0]
    expect((await fetchImage(gifTile.srcset[0].url)).meta.pages).toBe(3)

    // The gallery renders the same tiles.
    const gallery = await page('/gallery')
    const galleryTile = gallery.doc
      .querySelectorAll('.grid li.tile')
      .find((tile) => tile.toString().includes(shown[0].id))!
    expectTile(galleryTile, shown[0], ['avif', 'webp'])
  })

  test('album tiles are <picture>s too; the album unfurls as its first visible image by the same rule', async () => {
    const webp = await upload(await makeImage('webp', 1000, 500, 11), 'cover.webp')
    const album = await t.json('/api/albums', send('POST', { title: 'Pictures', isPublic: true }, owner.bearer))
    expect(album.status).toBe(201)
    const added = await t.json(
      `/api/albums/${album.body.album.id}/images`,
      send('POST', { imageId: webp.id }, owner.bearer),
    )
    expect(added.status).toBe(200)
    const { doc, meta } = await page(`/a/${album.body.album.id}`)
    expectTile(doc.querySelector('.grid li.tile')!, webp, ['webp'])
    expect(meta('og:image')).toBe(preset(webp, 'large', 'jpg'))
    expect([meta('og:image:type'), meta('og:image:width'), meta('og:image:height')]).toEqual([
      'image/jpeg',
      '1000',
      '500',
    ])
  })
})
