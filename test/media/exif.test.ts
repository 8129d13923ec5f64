import { afterAll, beforeAll, describe, expect, test } from 'bun:test'
import sharp from 'sharp'
import { stripMetadata } from '../../src/media/exif'
import { ifd0Tags, noise, pngChunk, scratchDir } from './helpers'

// Files are rewritten under the same name; libvips would otherwise answer from its cache.
sharp.cache(false)

let scratch: Awaited<ReturnType<typeof scratchDir>>
beforeAll(async () => {
  scratch = await scratchDir()
})
afterAll(() => scratch.cleanup())

const GPS_IFD = 0x8825
const ORIENTATION = 0x0112
const GPS = { GPSLatitudeRef: 'N', GPSLatitude: '51/1 30/1 26/1', GPSLongitudeRef: 'W', GPSLongitude: '0/1 7/1 39/1' }
const XMP_WITH_GPS =
  '<x:xmpmeta xmlns:x="adobe:ns:meta/"><rdf:RDF xmlns:rdf="http://www.w3.org/1999/02/22-rdf-syntax-ns#">' +
  '<rdf:Description xmlns:exif="http://ns.adobe.com/exif/1.0/" xmlns:dc="http://purl.org/dc/elements/1.1/" exif:GPSLatitude="51,30.43N" dc:format="image/jpeg">' +
  '<exif:GPSLongitude>0,7.65W</exif:GPSLongitude><dc:creator>Ann</dc:creator></rdf:Description></rdf:RDF></x:xmpmeta>'

/** 51/1 as an Exif RATIONAL in either byte order: present only while the latitude is. */
function hasLatitude(exif: Uint8Array | undefined): boolean {
  const b = Buffer.from(exif ?? [])
  return b.includes(Buffer.from([0, 0, 0, 51, 0, 0, 0, 1])) || b.includes(Buffer.from([51, 0, 0, 0, 1, 0, 0, 0]))
}

const tiffOf = (exif: Buffer | undefined) =>
  exif ? exif.subarray(exif.subarray(0, 4).toString() === 'Exif' ? 6 : 0) : new Uint8Array()

function photo() {
  return noise(64, 40)
}

async function pixels(path: string) {
  return sharp(path).raw().toBuffer()
}

describe('JPEG', () => {
  test("'gps' removes the GPS IFD, keeps orientation and other tags, and keeps every pixel", async () => {
    const original = await photo()
      .jpeg()
      .withExif({ IFD0: { Make: 'Acme' }, IFD3: GPS })
      .withMetadata({ orientation: 6 })
      .toBuffer()
    const before = await sharp(original).metadata()
    expect(hasLatitude(before.exif)).toBe(true)
    expect(ifd0Tags(tiffOf(before.exif)).has(GPS_IFD)).toBe(true)

    const path = await scratch.file(original)
    const originalPixels = await pixels(path)
    expect(await stripMetadata(path, 'jpeg', 'gps')).toBe(true)

    const after = await sharp(path).metadata()
    const tags = ifd0Tags(tiffOf(after.exif))
    expect(tags.has(GPS_IFD)).toBe(false)
    expect(tags.get(ORIENTATION)).toBe(6)
    expect(after.orientation).toBe(6)
    expect(Buffer.from(after.exif!).includes('Acme')).toBe(true)
    expect(hasLatitude(after.exif)).toBe(false)
    expect(await pixels(path)).toEqual(originalPixels)
    expect((await Bun.file(path).bytes()).length).toBe(original.length) // edited in place, not re-encoded
  })

  test("'gps' also removes GPS properties from XMP and keeps the rest", async () => {
    const path = await scratch.file(await photo().jpeg().withXmp(XMP_WITH_GPS).toBuffer())
    const originalPixels = await pixels(path)
    expect(await stripMetadata(path, 'jpeg', 'gps')).toBe(true)
    const xmp = (await sharp(path).metadata()).xmpAsString!
    expect(xmp).not.toContain('GPS')
    expect(xmp).toContain('dc:format="image/jpeg"')
    expect(xmp).toContain('<dc:creator>Ann</dc:creator>')
    expect(await pixels(path)).toEqual(originalPixels)
  })

  test("'all' drops Exif and XMP but keeps a non-default orientation", async () => {
    const original = await photo()
      .jpeg()
      .withExif({ IFD0: { Make: 'Acme' }, IFD3: GPS })
      .withMetadata({ orientation: 8 })
      .withXmp(XMP_WITH_GPS)
      .toBuffer()
    const path = await scratch.file(original)
    const originalPixels = await pixels(path)
    expect(await stripMetadata(path, 'jpeg', 'all')).toBe(true)
    const after = await sharp(path).metadata()
    expect(after.orientation).toBe(8)
    expect([...ifd0Tags(tiffOf(after.exif)).keys()]).toEqual([ORIENTATION])
    expect(after.xmp).toBeUndefined()
    expect(await pixels(path)).toEqual(originalPixels)
  })

  test("'all' with upright orientation leaves no Exif at all", async () => {
    const path = await scratch.file(
      await photo()
        .jpeg()
        .withExif({ IFD0: { Make: 'Acme' } })
        .toBuffer(),
    )
    expect(await stripMetadata(path, 'jpeg', 'all')).toBe(true)
    expect((await sharp(path).metadata()).exif).toBeUndefined()
  })

  test('a file without such metadata stays byte for byte, and so does everything under none', async () => {
    const plain = await photo().jpeg().toBuffer()
    const noGps = await photo()
      .jpeg()
      .withExif({ IFD0: { Make: 'Acme' } })
      .toBuffer()
    const withGps = await photo()
      .jpeg()
      .withExif({ IFD0: { Make: 'Acme' }, IFD3: GPS })
      .toBuffer()
    for (const [bytes, mode] of [
      [plain, 'gps'],
      [plain, 'all'],
      [noGps, 'gps'],
      [withGps, 'none'],
    ] as const) {
      const path = await scratch.file(bytes)
      expect(await stripMetadata(path, 'jpeg', mode)).toBe(false)
      expect(await Bun.file(path).bytes()).toEqual(new Uint8Array(bytes))
    }
  })
})

describe('PNG', () => {
  test("'gps' edits eXIf in place and keeps the image", async () => {
    const path = await scratch.file(
      await photo()
        .png()
        .withExif({ IFD0: { Make: 'Acme' }, IFD3: GPS })
        .toBuffer(),
    )
    const originalPixels = await pixels(path)
    expect(await stripMetadata(path, 'png', 'gps')).toBe(true)
    const after = await sharp(path).metadata()
    expect(ifd0Tags(tiffOf(after.exif)).has(GPS_IFD)).toBe(false)
    expect(hasLatitude(after.exif)).toBe(false)
    expect(Buffer.from(after.exif!).includes('Acme')).toBe(true)
    expect(await pixels(path)).toEqual(originalPixels)
  })

  test("'gps' scrubs XMP in a compressed zTXt chunk (as libvips writes it)", async () => {
    const path = await scratch.file(await photo().png().withXmp(XMP_WITH_GPS).toBuffer())
    const originalPixels = await pixels(path)
    expect(await stripMetadata(path, 'png', 'gps')).toBe(true)
    const xmp = (await sharp(path).metadata()).xmpAsString!
    expect(xmp).toContain('<dc:creator>Ann</dc:creator>')
    expect(xmp).not.toContain('GPS')
    expect(await pixels(path)).toEqual(originalPixels)
  })

  test("'gps' scrubs an uncompressed iTXt XMP chunk; 'all' drops text chunks and eXIf", async () => {
    const png = Buffer.from(
      await photo()
        .png()
        .withExif({ IFD0: { Make: 'Acme' }, IFD3: GPS })
        .toBuffer(),
    )
    const iend = png.length - 12
    const itxt = pngChunk('iTXt', Buffer.from(`XML:com.adobe.xmp\0\0\0\0\0${XMP_WITH_GPS}`))
    const text = pngChunk('tEXt', Buffer.from('Comment\0hello'))
    const withText = Buffer.concat([png.subarray(0, iend), itxt, text, png.subarray(iend)])

    const gpsPath = await scratch.file(withText)
    const originalPixels = await pixels(gpsPath)
    expect(await stripMetadata(gpsPath, 'png', 'gps')).toBe(true)
    const gpsBytes = Buffer.from(await Bun.file(gpsPath).bytes())
    expect(gpsBytes.includes('<dc:creator>Ann</dc:creator>')).toBe(true)
    expect(gpsBytes.includes('GPS')).toBe(false)
    expect(gpsBytes.includes(text)).toBe(true)
    expect(await pixels(gpsPath)).toEqual(originalPixels) // also proves every rewritten chunk CRC is right

    const allPath = await scratch.file(withText)
    expect(await stripMetadata(allPath, 'png', 'all')).toBe(true)
    const all = await sharp(allPath).metadata()
    expect(all.exif).toBeUndefined()
    const allBytes = Buffer.from(await Bun.file(allPath).bytes())
    expect(allBytes.includes('xmpmeta') || allBytes.includes('Comment')).toBe(false)
    expect(await pixels(allPath)).toEqual(originalPixels)
  })

  test('a PNG without metadata is untouched', async () => {
    const bytes = await photo().png().toBuffer()
    const path = await scratch.file(bytes)
    expect(await stripMetadata(path, 'png', 'gps')).toBe(false)
    expect(await stripMetadata(path, 'png', 'all')).toBe(false)
    expect(await Bun.file(path).bytes()).toEqual(new Uint8Array(bytes))
  })
})
