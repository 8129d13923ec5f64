import { afterAll, beforeAll, describe, expect, test } from 'bun:test'
import exifReader from 'exif-reader'
import sharp from 'sharp'
import { decodeHeic } from '../../src/media/heic'
import { type Bytes, uploadForm } from '../fixtures'
import { startTestServer, storedKeys, type TestServer, userWithKey } from '../helpers'
import { heifEnc, turnedHeic } from '../media/heic-files'
import { gradient } from '../media/helpers'

// HEIC/HEIF uploads end to end, with files heif-enc makes: every door, the original kept, pages on its JPEG preset.

sharp.cache(false)

let t: TestServer
let owner: Awaited<ReturnType<typeof userWithKey>>
let heic: Bytes
beforeAll(async () => {
  t = await startTestServer()
  owner = await userWithKey(t)
  heic = await heifEnc(gradient(640, 480))
})
afterAll(() => t.stop())

const apiUpload = (bytes: Bytes, name = 'photo.heic', server = t, headers = owner.keyHeader) =>
  server.json('/api/v1/upload', { method: 'POST', headers, body: uploadForm([{ bytes, name }]) })

const path = (url: string) => new URL(url).pathname

describe('HEIC uploads', () => {
  test('201 with its size; the direct link answers the bytes as uploaded, as image/heic; the thumbnail is a WebP', async () => {
    const res = await apiUpload(heic)
    expect(res.status).toBe(201)
    expect(res.body).toMatchObject({ mime: 'image/heic', width: 640, height: 480, size: heic.length })
    expect(res.body.url).toBe(`${t.url}/cdn/${res.body.id}.heic`)
    const original = await t.fetch(path(res.body.url))
    expect(original.status).toBe(200)
    expect(original.headers.get('content-type')).toBe('image/heic')
    expect(new Uint8Array(await original.arrayBuffer())).toEqual(heic)
    const thumb = await t.fetch(path(res.body.thumbnail))
    expect(thumb.headers.get('content-type')).toBe('image/webp')
    expect(await sharp(new Uint8Array(await thumb.arrayBuffer())).metadata()).toMatchObject({
      format: 'webp',
      width: 500,
      height: 375,
    })
  })

  test('a turned photo (irot) is stored upright: width and height swapped, and so is its thumbnail', async () => {
    const res = await apiUpload(turnedHeic(heic))
    expect(res.status).toBe(201)
    expect(res.body).toMatchObject({ width: 480, height: 640 })
    const thumb = await t.fetch(path(res.body.thumbnail))
    expect(await sharp(new Uint8Array(await thumb.arrayBuffer())).metadata()).toMatchObject({ width: 375, height: 500 })
  })

  test('a cut HEIC is a 400 naming the file, and nothing is stored', async () => {
    const before = await storedKeys(t)
    const res = await apiUpload(heic.subarray(0, heic.length - 200), 'cut.heic')
    expect(res.status).toBe(400)
    expect(res.body.error).toContain('cut.heic')
    expect(res.body.error).toContain('a HEIF picture cut off by the end of the file')
    expect(await storedKeys(t)).toEqual(before)
  })

  test('over the pixel limit: refused from its header, and the worker pool goes on working', async () => {
    const small = await startTestServer({ MAX_IMAGE_PIXELS: '100000' })
    try {
      const user = await userWithKey(small)
      const res = await apiUpload(heic, 'big.heic', small, user.keyHeader)
      expect(res.status).toBe(400)
      expect(res.body.error).toContain('Image exceeds 0.1 megapixels')
      expect(await storedKeys(small)).toEqual([])
      const next = await apiUpload(await heifEnc(gradient(300, 200)), 'ok.heic', small, user.keyHeader)
      expect(next.status).toBe(201)
      expect(next.body).toMatchObject({ width: 300, height: 200 })
    } finally {
      await small.stop()
    }
  })

  test('location is stripped from its Exif item (STRIP_METADATA=gps), the pixels untouched', async () => {
    const GPS = {
      GPSLatitudeRef: 'N',
      GPSLatitude: '51/1 30/1 26/1',
      GPSLongitudeRef: 'W',
      GPSLongitude: '0/1 7/1 39/1',
    }
    const withGps = await heifEnc(gradient(320, 240).withExif({ IFD0: { Make: 'Acme' }, IFD3: GPS }), 'jpeg')
    const exifOf = async (b: Uint8Array) => exifReader((await sharp(b).metadata()).exif!)
    expect((await exifOf(withGps)).GPSInfo?.GPSLatitude).toBeDefined()
    const res = await apiUpload(withGps, 'gps.heic')
    expect(res.status).toBe(201)
    const stored = new Uint8Array(await (await t.fetch(path(res.body.url))).arrayBuffer())
    expect(stored.length).toBe(res.body.size)
    const exif = await exifOf(stored)
    expect(exif.GPSInfo?.GPSLatitude).toBeUndefined()
    expect(exif.Image?.Make).toBe('Acme')
    const pixels = async (b: Uint8Array) => (await decodeHeic(b, { width: 320, height: 240 }, 1e8, 2 ** 30)).data
    expect(await pixels(stored)).toEqual(await pixels(withGps))
  })

  test('the web upload (anonymous) and tus take HEIC too', async () => {
    const web = await t.json('/api/upload', { method: 'POST', body: uploadForm([{ bytes: heic, name: 'web.heic' }]) })
    expect(web.status).toBe(201)
    expect(web.body).toMatchObject({ mime: 'image/heic', width: 640, height: 480 })

    const tus = { 'tus-resumable': '1.0.0', ...owner.keyHeader }
    const created = await t.fetch('/api/v1/tus', {
      method: 'POST',
      headers: { ...tus, 'upload-length': String(heic.length), 'upload-metadata': `filename ${btoa('tus.heic')}` },
    })
    expect(created.status).toBe(201)
    const done = await fetch(created.headers.get('location')!, {
      method: 'PATCH',
      headers: { ...tus, 'content-type': 'application/offset+octet-stream', 'upload-offset': '0' },
      body: heic,
    })
    expect(done.status).toBe(200)
    expect(await done.json()).toMatchObject({ mime: 'image/heic', width: 640, height: 480, filename: 'tus.heic' })
  })

  test('the viewer page and oEmbed show the large JPEG preset: no unfurler or browser is pointed at the .heic', async () => {
    const res = await apiUpload(heic, 'page.heic')
    const page = await (await t.fetch(`/i/${res.body.id}`)).text()
    // Presets are never enlarged: the 640x480 picture's large JPEG is 640x480.
    const jpeg = res.body.url.replace(`/cdn/${res.body.id}.heic`, `/cdn/large/${res.body.id}.jpg`)
    expect(page).toContain(`<meta property="og:image" content="${jpeg}">`)
    expect(page).toContain('<meta property="og:image:type" content="image/jpeg">')
    expect(page).toContain('<meta property="og:image:width" content="640">')
    expect(page).toContain(`<img src="${jpeg}" width="640" height="480"`)
    expect(page).not.toContain(`src="${res.body.url}"`)
    // The link around the picture still gives the original.
    expect(page).toContain(`<a href="${res.body.url}">`)
    const oembed = await t.json(`/api/oembed?url=${encodeURIComponent(res.body.viewer)}`)
    expect(oembed.body).toMatchObject({ type: 'photo', url: jpeg, width: 640, height: 480 })
    const served = await t.fetch(path(jpeg))
    expect(served.status).toBe(200)
    expect(served.headers.get('content-type')).toBe('image/jpeg')
  })
})
