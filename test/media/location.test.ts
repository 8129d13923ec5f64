import { afterAll, beforeAll, describe, expect, test } from 'bun:test'
import exifReader from 'exif-reader'
import sharp from 'sharp'
import { uploadForm } from '../fixtures'
import { startTestServer, type TestServer, userWithKey } from '../helpers'
import { fakeClassifier } from '../moderation/fake-classifier'

// End to end: what an uploader sends with location data, and what the world then gets from the direct link.

sharp.cache(false)

const GPS = { GPSLatitudeRef: 'N', GPSLatitude: '51/1 30/1 26/1', GPSLongitudeRef: 'W', GPSLongitude: '0/1 7/1 39/1' }
const XMP_WITH_GPS =
  '<x:xmpmeta xmlns:x="adobe:ns:meta/"><rdf:RDF xmlns:rdf="http://www.w3.org/1999/02/22-rdf-syntax-ns#">' +
  '<rdf:Description xmlns:exif="http://ns.adobe.com/exif/1.0/" xmlns:dc="http://purl.org/dc/elements/1.1/" exif:GPSLatitude="51,30.43N" dc:format="image/jpeg">' +
  '<exif:GPSLongitude>0,7.65W</exif:GPSLongitude><dc:creator>Ann</dc:creator></rdf:Description></rdf:RDF></x:xmpmeta>'

type Bytes = Uint8Array<ArrayBuffer>
type Account = Awaited<ReturnType<typeof userWithKey>>

/** Random pixels: any decoding difference would show. */
function photo(width = 96, height = 64) {
  return sharp(Buffer.from(crypto.getRandomValues(new Uint8Array(width * height * 3))), {
    raw: { width, height, channels: 3 },
  })
}

const bytesOf = async (image: ReturnType<typeof sharp>): Promise<Bytes> => new Uint8Array(await image.toBuffer())

/** A phone photo: Exif with a camera make, GPS and a sideways orientation, and XMP with GPS too. */
const jpegWithGps = () =>
  bytesOf(
    photo()
      .jpeg({ quality: 85 })
      .withExif({ IFD0: { Make: 'Acme' }, IFD3: GPS })
      .withMetadata({ orientation: 6 })
      .withXmp(XMP_WITH_GPS),
  )
const pngWithGps = () =>
  bytesOf(
    photo()
      .png()
      .withExif({ IFD0: { Make: 'Acme' }, IFD3: GPS }),
  )
const webpWithGps = () =>
  bytesOf(
    photo()
      .webp({ quality: 80 })
      .withExif({ IFD0: { Make: 'Acme' }, IFD3: GPS }),
  )

/** The Exif of a file as exif-reader reads it (from sharp's metadata), or null when there is none. */
async function exifOf(bytes: Uint8Array) {
  const { exif } = await sharp(bytes).metadata()
  return exif ? exifReader(exif) : null
}

/** 51/1, the latitude's degrees as an Exif RATIONAL in either byte order: present anywhere in the file only while GPS is. */
function hasLatitudeBytes(bytes: Uint8Array): boolean {
  const b = Buffer.from(bytes)
  return b.includes(Buffer.from([0, 0, 0, 51, 0, 0, 0, 1])) || b.includes(Buffer.from([51, 0, 0, 0, 1, 0, 0, 0]))
}

const pixels = async (bytes: Uint8Array) => sharp(bytes).raw().toBuffer()

/** One server per STRIP_METADATA mode, each with an account. */
async function serverFor(mode: 'gps' | 'all' | 'none' | undefined) {
  const t = await startTestServer(
    { TRUST_PROXY: 'true', ...(mode ? { STRIP_METADATA: mode } : {}) },
    { classifier: fakeClassifier('neutral').classifier, rescan: { intervalMs: 3_600_000 } },
  )
  return { t, user: await userWithKey(t) }
}

async function uploadVia(t: TestServer, user: Account, bytes: Bytes, name: string) {
  const res = await t.json('/api/v1/upload', {
    method: 'POST',
    headers: user.keyHeader,
    body: uploadForm([{ bytes, name }]),
  })
  if (res.status !== 201) throw new Error(`upload failed: ${res.status} ${JSON.stringify(res.body)}`)
  return res.body
}

/** The bytes behind a link of the response. */
async function served(t: TestServer, link: string): Promise<Bytes> {
  const res = await t.fetch(new URL(link).pathname)
  expect(res.status).toBe(200)
  return new Uint8Array(await res.arrayBuffer())
}

async function expectThumbnailWithoutMetadata(t: TestServer, link: string) {
  const meta = await sharp(await served(t, link)).metadata()
  expect(meta.format).toBe('webp')
  expect(meta.exif).toBeUndefined()
  expect(meta.xmp).toBeUndefined()
}

describe('STRIP_METADATA=gps (the default)', () => {
  let t: TestServer
  let user: Account
  beforeAll(async () => {
    ;({ t, user } = await serverFor(undefined))
  })
  afterAll(() => t.stop())

  test('a JPEG comes back without location, with its orientation and other tags, and with identical pixels', async () => {
    const original = await jpegWithGps()
    const before = await exifOf(original)
    expect(before?.GPSInfo?.GPSLatitude).toBeDefined()
    expect(before?.Image?.Orientation).toBe(6)
    expect((await sharp(original).metadata()).xmpAsString).toContain('GPSLatitude')

    const up = await uploadVia(t, user, original, 'phone.jpg')
    const bytes = await served(t, up.url)
    const after = await exifOf(bytes)
    expect(after?.GPSInfo).toBeUndefined()
    expect(hasLatitudeBytes(bytes)).toBe(false)
    expect(after?.Image?.Orientation).toBe(6)
    expect(after?.Image?.Make).toBe('Acme')
    const meta = await sharp(bytes).metadata()
    expect(meta.orientation).toBe(6)
    expect(meta.xmpAsString).not.toContain('GPS')
    expect(meta.xmpAsString).toContain('<dc:creator>Ann</dc:creator>')

    // Not re-encoded: the decoded pixels are the same, bit for bit.
    expect((await pixels(bytes)).equals(await pixels(original))).toBe(true)

    // Edited in place (GPS zeroed, XMP GPS properties blanked with spaces): the stored file keeps the upload's length.
    expect(bytes.length).toBe(original.length)
    expect(up.size).toBe(bytes.length)
    expect((await t.json(`/api/v1/image/${up.id}`)).body.data.size).toBe(bytes.length)
    const me = (await t.json('/api/v1/me', { headers: user.keyHeader })).body
    expect(me.storage.used).toBe(bytes.length)

    await expectThumbnailWithoutMetadata(t, up.thumbnail)
  })

  test('a PNG with eXIf GPS loses the location and keeps the rest', async () => {
    const original = await pngWithGps()
    expect((await exifOf(original))?.GPSInfo?.GPSLatitude).toBeDefined()
    const up = await uploadVia(t, user, original, 'map.png')
    const bytes = await served(t, up.url)
    const after = await exifOf(bytes)
    expect(after?.GPSInfo).toBeUndefined()
    expect(hasLatitudeBytes(bytes)).toBe(false)
    expect(after?.Image?.Make).toBe('Acme')
    expect((await pixels(bytes)).equals(await pixels(original))).toBe(true)
    expect(up.size).toBe(bytes.length)
    await expectThumbnailWithoutMetadata(t, up.thumbnail)
  })

  test('a WebP with EXIF GPS loses the location and keeps the rest', async () => {
    const original = await webpWithGps()
    expect((await exifOf(original))?.GPSInfo?.GPSLatitude).toBeDefined()
    const up = await uploadVia(t, user, original, 'trip.webp')
    const bytes = await served(t, up.url)
    const after = await exifOf(bytes)
    expect(after?.GPSInfo).toBeUndefined()
    expect(hasLatitudeBytes(bytes)).toBe(false)
    expect(after?.Image?.Make).toBe('Acme')
    expect((await pixels(bytes)).equals(await pixels(original))).toBe(true)
    expect(up.size).toBe(bytes.length)
    await expectThumbnailWithoutMetadata(t, up.thumbnail)
  })

  test('the web upload (anonymous) strips the same way', async () => {
    const original = await jpegWithGps()
    const res = await t.json('/api/upload', {
      method: 'POST',
      headers: { 'x-forwarded-for': '192.0.2.10' },
      body: uploadForm([{ bytes: original, name: 'anon.jpg' }]),
    })
    expect(res.status).toBe(201)
    const bytes = await served(t, res.body.url)
    expect((await exifOf(bytes))?.GPSInfo).toBeUndefined()
    expect((await exifOf(bytes))?.Image?.Orientation).toBe(6)
    expect(res.body.size).toBe(bytes.length)
  })

  test('a file without location is stored byte for byte', async () => {
    const original = await bytesOf(
      photo()
        .jpeg()
        .withExif({ IFD0: { Make: 'Acme' } }),
    )
    const up = await uploadVia(t, user, original, 'plain.jpg')
    expect(await served(t, up.url)).toEqual(original)
    expect(up.size).toBe(original.length)
  })
})

describe('STRIP_METADATA=all', () => {
  let t: TestServer
  let user: Account
  beforeAll(async () => {
    ;({ t, user } = await serverFor('all'))
  })
  afterAll(() => t.stop())

  test('a JPEG loses Exif and XMP but keeps its orientation and its pixels', async () => {
    const original = await jpegWithGps()
    const up = await uploadVia(t, user, original, 'phone.jpg')
    const bytes = await served(t, up.url)
    const after = await exifOf(bytes)
    expect(after?.GPSInfo).toBeUndefined()
    expect(after?.Image?.Make).toBeUndefined()
    expect(after?.Image?.Orientation).toBe(6)
    expect(hasLatitudeBytes(bytes)).toBe(false)
    const meta = await sharp(bytes).metadata()
    expect(meta.orientation).toBe(6)
    expect(meta.xmp).toBeUndefined()
    expect((await pixels(bytes)).equals(await pixels(original))).toBe(true)
    expect(up.size).toBe(bytes.length)
    expect(up.size).toBeLessThan(original.length)
    expect((await t.json('/api/v1/me', { headers: user.keyHeader })).body.storage.used).toBe(bytes.length)
    await expectThumbnailWithoutMetadata(t, up.thumbnail)
  })

  test('PNG and WebP lose their Exif entirely', async () => {
    for (const [original, name] of [
      [await pngWithGps(), 'a.png'],
      [await webpWithGps(), 'a.webp'],
    ] as const) {
      const up = await uploadVia(t, user, original, name)
      const bytes = await served(t, up.url)
      expect([name, (await sharp(bytes).metadata()).exif]).toEqual([name, undefined])
      expect(hasLatitudeBytes(bytes)).toBe(false)
      expect((await pixels(bytes)).equals(await pixels(original))).toBe(true)
      expect(up.size).toBe(bytes.length)
      expect(up.size).toBeLessThan(original.length)
      await expectThumbnailWithoutMetadata(t, up.thumbnail)
    }
  })
})

describe('STRIP_METADATA=none', () => {
  let t: TestServer
  let user: Account
  beforeAll(async () => {
    ;({ t, user } = await serverFor('none'))
  })
  afterAll(() => t.stop())

  test('the upload is stored exactly as sent, location included; the thumbnail still carries nothing', async () => {
    for (const [original, name] of [
      [await jpegWithGps(), 'a.jpg'],
      [await pngWithGps(), 'a.png'],
      [await webpWithGps(), 'a.webp'],
    ] as const) {
      const up = await uploadVia(t, user, original, name)
      const bytes = await served(t, up.url)
      expect(bytes).toEqual(original)
      expect((await exifOf(bytes))?.GPSInfo?.GPSLatitude).toBeDefined()
      expect(up.size).toBe(original.length)
      await expectThumbnailWithoutMetadata(t, up.thumbnail)
    }
  })
})
