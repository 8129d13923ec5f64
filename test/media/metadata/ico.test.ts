import { describe, expect, test } from 'bun:test'
import sharp from 'sharp'
import { locationTags, metadataTags, readTagsOf } from '../exiftool'
import { CAMERA_TAGS, exiftoolWrite, GPS_TAGS, readBytes, refusal, strip, testScratch } from './containers'

// An icon's PNG images carry text chunks and eXIf like any PNG, and anyone can take one out and open it; exiftool
// does not look inside an icon, so the test takes the images out itself (its own reading of the directory) and has
// exiftool judge each one.

sharp.cache(false)
const scratch = testScratch()

interface Image {
  width: number
  bytes: Uint8Array
}

/** An ICO of these images: the 6-byte header, a 16-byte entry each, then the images, with `gap` bytes between. */
function ico(images: Image[], opts: { gap?: number; trailer?: Uint8Array } = {}): Uint8Array {
  const gap = opts.gap ?? 0
  const dirEnd = 6 + 16 * images.length
  const size = dirEnd + images.reduce((s, i) => s + i.bytes.length + gap, 0) + (opts.trailer?.length ?? 0)
  const out = Buffer.alloc(size, 0x47)
  out.writeUInt16LE(0, 0)
  out.writeUInt16LE(1, 2)
  out.writeUInt16LE(images.length, 4)
  let at = dirEnd
  images.forEach((image, i) => {
    const e = 6 + 16 * i
    out.fill(0, e, e + 16)
    out[e] = image.width
    out[e + 1] = image.width
    out.writeUInt16LE(1, e + 4)
    out.writeUInt16LE(32, e + 6)
    out.writeUInt32LE(image.bytes.length, e + 8)
    out.writeUInt32LE(at, e + 12)
    out.set(image.bytes, at)
    at += image.bytes.length + gap
  })
  if (opts.trailer) out.set(opts.trailer, at)
  return new Uint8Array(out)
}

/** The images the directory names, read back as a plain reader would. */
function imagesOf(b: Uint8Array): Uint8Array[] {
  const buf = Buffer.from(b)
  return Array.from({ length: buf.readUInt16LE(4) }, (_, i) => {
    const e = 6 + 16 * i
    const offset = buf.readUInt32LE(e + 12)
    return b.subarray(offset, offset + buf.readUInt32LE(e + 8))
  })
}

const square = (side: number, colour: string) =>
  sharp({ create: { width: side, height: side, channels: 4, background: colour } })

/** A PNG with location and camera data in every group exiftool writes for PNG. */
async function pngWithGps(side: number): Promise<Uint8Array> {
  const path = scratch().path(`gps-${side}.png`)
  await square(side, '#2080c0').png().toFile(path)
  await exiftoolWrite(path, [...GPS_TAGS, ...CAMERA_TAGS, '-PNG:Comment=taken at home'])
  return readBytes(path)
}

/** A 32-bit DIB (BMP without its file header, height doubled for the AND mask), as icons hold small sizes. */
function dib(side: number): Uint8Array {
  const header = Buffer.alloc(40)
  header.writeUInt32LE(40, 0)
  header.writeInt32LE(side, 4)
  header.writeInt32LE(side * 2, 8)
  header.writeUInt16LE(1, 12)
  header.writeUInt16LE(32, 14)
  const pixels = Buffer.alloc(side * side * 4, 0x80)
  const mask = Buffer.alloc(side * Math.ceil(side / 32) * 4)
  return new Uint8Array(Buffer.concat([header, pixels, mask]))
}

describe('ICO files', () => {
  test('a PNG image inside an icon loses its location (and, under all, its metadata); a DIB stays as it was', async () => {
    const png = await pngWithGps(32)
    const bmp = dib(16)
    const file = ico([
      { width: 16, bytes: bmp },
      { width: 32, bytes: png },
    ])
    const [before] = await readTagsOf([png])
    expect(locationTags(before!).length).toBeGreaterThan(0)
    for (const mode of ['gps', 'all'] as const) {
      const { out, refusal: refused } = strip(file, 'ico', mode)
      expect(refused).toBeNull()
      const [keptDib, keptPng] = imagesOf(out!)
      expect(Buffer.from(keptDib!).equals(Buffer.from(bmp))).toBe(true)
      const [after] = await readTagsOf([keptPng!])
      expect([mode, locationTags(after!)]).toEqual([mode, []])
      if (mode === 'all') expect(metadataTags(after!)).toEqual([])
      else expect(after!['IFD0:Make']).toBe('Acme')
      // The same pixels, as sharp decodes the icon's largest image and the PNG taken out of it.
      const [a, b] = await Promise.all([png, keptPng!].map((p) => sharp(p).raw().toBuffer()))
      expect(a!.equals(b!)).toBe(true)
    }
  })

  test('an icon with nothing to drop is stored byte for byte; bytes between and after its images are dropped', async () => {
    const plain = new Uint8Array(await square(32, '#c02080').png().toBuffer())
    const images = [
      { width: 16, bytes: dib(16) },
      { width: 32, bytes: plain },
    ]
    expect(strip(ico(images), 'ico', 'gps').out).toBeNull()
    const padded = ico(images, { gap: 7, trailer: new TextEncoder().encode('GPSLatitude=51.5') })
    const { out } = strip(padded, 'ico', 'all')
    expect(Buffer.from(out!).equals(Buffer.from(ico(images)))).toBe(true)
  })

  test('a directory that cannot be read whole is refused with its reason', () => {
    const plain = dib(8)
    const good = ico([{ width: 8, bytes: plain }])
    const pastEnd = good.slice(0, good.length - 10)
    expect(refusal(pastEnd, 'ico')).toContain('an icon image outside the file')
    const overlapping = Buffer.from(ico([plain, plain].map((bytes) => ({ width: 8, bytes }))))
    overlapping.writeUInt32LE(overlapping.readUInt32LE(6 + 12) + 4, 6 + 16 + 12)
    expect(refusal(new Uint8Array(overlapping), 'ico')).toContain('icon images that overlap')
    const none = Buffer.from(good)
    none.writeUInt16LE(0, 4)
    expect(refusal(new Uint8Array(none), 'ico')).toContain('an icon directory that cannot be read')
  })
})
