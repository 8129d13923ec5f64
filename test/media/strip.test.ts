import { describe, expect, test } from 'bun:test'
import exifReader from 'exif-reader'
import sharp from 'sharp'
import { Cost, LOCATION_UNSAFE, type StripMode, stripBytes } from '../../src/media/exif'
import type { ImageFormat } from '../../src/media/formats'
import { pngChunk } from './helpers'
import {
  bytes,
  concat,
  exifApp1,
  GPS,
  gpsEntriesPng,
  hasLatitudeBytes,
  iTXt,
  photo,
  realExifTiff,
  strayZeroJpeg,
  tiffStructure,
  tiffWithGps,
  withJpegSegments,
  withPngChunks,
  XMP_GPS_NAME,
  XMP_WITH_GPS,
  xmpApp1,
  xmpBombPng,
  zTXt,
} from './hostile-files'

sharp.cache(false)

/** stripBytes on a copy (it may edit its input); the stored bytes (the input when unchanged) and the cost. */
function strip(input: Uint8Array, format: ImageFormat, mode: StripMode = 'gps') {
  const cost = new Cost()
  const out = stripBytes(input.slice(), format, mode, cost)
  return { out, stored: out ?? input, cost: cost.units }
}

const refusal = (input: Uint8Array, format: ImageFormat, mode: StripMode = 'gps') => {
  try {
    strip(input, format, mode)
  } catch (err) {
    return (err as Error).message
  }
  return null
}

/** The GPS directory as exif-reader (an independent reader) sees it in the file's Exif, as sharp extracts it. */
async function gpsOf(file: Uint8Array) {
  const { exif } = await sharp(file).metadata()
  return exif ? exifReader(exif).GPSInfo : undefined
}
const xmpOf = async (file: Uint8Array) => (await sharp(file).metadata()).xmpAsString ?? ''
// As the upload pipeline decodes: warnings (a stray byte before a marker) are not failures.
const pixels = (file: Uint8Array) => sharp(file, { failOn: 'error' }).raw().toBuffer()

describe("the issue's hostile files", () => {
  test('a zTXt XMP bomb of <a:GPS> is refused, at a cost linear in the file, however far it inflates', async () => {
    for (const size of [196 * 1024, 16 << 20]) {
      const png = await xmpBombPng(size)
      expect(refusal(png, 'png')).toStartWith(LOCATION_UNSAFE)
    }
    // Inside a file big enough for the inflate budget, the XMP is scanned: unclosed GPS elements cannot be removed
    // with certainty, and the scan's cost grows with the XMP, not with its square.
    const costs = []
    for (const size of [50_000, 200_000]) {
      const host = withPngChunks(await xmpBombPng(size), [pngChunk('tEXt', concat(['Comment\0', 'x'.repeat(20_000)]))])
      const cost = new Cost()
      expect(() => stripBytes(host.slice(), 'png', 'gps', cost)).toThrow(LOCATION_UNSAFE)
      expect(cost.units).toBeGreaterThan(size) // the XMP was inflated and read
      costs.push(cost.units / size)
    }
    expect(costs[1]!).toBeLessThan(costs[0]! * 1.1)
    expect(costs[1]!).toBeLessThan(8)
  })

  test('a GPS directory of 10,000 entries each claiming the rest of a 6 MB block is refused; 1,000 are removed in one fill', async () => {
    expect(refusal(await gpsEntriesPng(10_000), 'png')).toStartWith(LOCATION_UNSAFE)
    const png = await gpsEntriesPng(1_000)
    const { out, cost } = strip(png, 'png')
    expect(out).not.toBeNull()
    expect(cost).toBeLessThan(3 * png.length)
    expect(await gpsOf(out!)).toBeUndefined()
    expect(await pixels(out!)).toEqual(await pixels(png))
  })

  test('a JPEG with a stray 00 between markers loses its GPS (libjpeg skips such bytes, and so does the walk)', async () => {
    const jpeg = await strayZeroJpeg()
    expect(await gpsOf(jpeg)).toBeDefined()
    const { out } = strip(jpeg, 'jpeg')
    expect(out).not.toBeNull()
    expect(await gpsOf(out!)).toBeUndefined()
    expect(hasLatitudeBytes(out!)).toBe(false)
    expect(out!.length).toBe(jpeg.length)
    expect(await pixels(out!)).toEqual(await pixels(jpeg))
  })
})

describe('JPEG as cameras and editors write it', () => {
  test('fill bytes and padding between markers, several Exif and XMP APP1 segments: every GPS goes, in place', async () => {
    const base = new Uint8Array(await photo().jpeg().toBuffer())
    const tiff = await realExifTiff()
    const jpeg = withJpegSegments(base, [exifApp1(tiff), xmpApp1(bytes(XMP_WITH_GPS)), exifApp1(tiff)])
    // FF fill bytes before every marker after SOI, and a 00 pad after the first segment.
    const padded = Buffer.from(jpeg)
    const segment2 = 2 + 4 + tiff.length + 6
    const file = concat([
      padded.subarray(0, 2),
      [0xff, 0xff],
      padded.subarray(2, segment2),
      [0],
      padded.subarray(segment2),
    ])
    const { out } = strip(file, 'jpeg')
    expect(out!.length).toBe(file.length)
    expect(hasLatitudeBytes(out!)).toBe(false)
    expect(Buffer.from(out!).toString('latin1')).not.toMatch(XMP_GPS_NAME)
    expect(Buffer.from(out!).includes('<dc:creator>Ann</dc:creator>')).toBe(true)
    expect(await pixels(out!)).toEqual(await pixels(file))
  })

  test('extended XMP: a GPS property cut across two parts is removed; parts that do not fit together are refused', async () => {
    const base = new Uint8Array(await photo().jpeg().toBuffer())
    const packet = bytes(
      `<x:xmpmeta><rdf:Description xmlns:exif="e">${'<dc:note>pad</dc:note>'.repeat(5)}<exif:GPSLatitude>51,30.43N</exif:GPSLatitude></rdf:Description></x:xmpmeta>`,
    )
    const cut = Buffer.from(packet).indexOf('GPSLatitude>51') + 4
    const part = (offset: number, data: Uint8Array): [number, Uint8Array] => {
      const head = Buffer.alloc(8)
      head.writeUInt32BE(packet.length, 0)
      head.writeUInt32BE(offset, 4)
      return [0xe1, concat(['http://ns.adobe.com/xmp/extension/\0', 'A'.repeat(32), head, data])]
    }
    const file = withJpegSegments(base, [part(cut, packet.subarray(cut)), part(0, packet.subarray(0, cut))])
    const { out } = strip(file, 'jpeg')
    expect(Buffer.from(out!).includes('51,30.43N')).toBe(false)
    expect(Buffer.from(out!).includes('<dc:note>pad</dc:note>')).toBe(true)
    const gapped = withJpegSegments(base, [part(cut + 1, packet.subarray(cut + 1)), part(0, packet.subarray(0, cut))])
    expect(refusal(gapped, 'jpeg')).toStartWith(LOCATION_UNSAFE)
  })

  test('an image appended after EOI (Multi-Picture Format) loses its GPS too, in both modes', async () => {
    const main = new Uint8Array(
      await photo()
        .jpeg()
        .withExif({ IFD0: { Make: 'Acme' }, IFD3: GPS })
        .toBuffer(),
    )
    const second = new Uint8Array(
      await photo(8, 8, 2)
        .jpeg()
        .withExif({ IFD0: { Make: 'Acme' }, IFD3: GPS })
        .toBuffer(),
    )
    const file = concat([main, second])
    for (const mode of ['gps', 'all'] as const) {
      const { out } = strip(file, 'jpeg', mode)
      expect([mode, hasLatitudeBytes(out!)]).toEqual([mode, false])
      expect(await pixels(out!)).toEqual(await pixels(file))
    }
  })
})

describe('XMP, removed in place with spaces', () => {
  const jpegWithXmp = async (xmp: string) =>
    withJpegSegments(new Uint8Array(await photo().jpeg().toBuffer()), [xmpApp1(bytes(xmp))])

  test('attributes, elements, nested structures, self-closing elements and other namespaces spelling Gps', async () => {
    const xmp =
      '<x:xmpmeta xmlns:x="adobe:ns:meta/"><rdf:RDF xmlns:rdf="r"><rdf:Description xmlns:exif="e" xmlns:dc="d" xmlns:drone-dji="j" ' +
      'exif:GPSLatitude=\'51,30.43N\' drone-dji:GpsLongitude="-0.1275" dc:format="image/jpeg">' +
      '<exif:GPSAltitude rdf:parseType="Resource"><exif:GPSAltitude>12/1</exif:GPSAltitude><rdf:value>x > y</rdf:value></exif:GPSAltitude>' +
      '<exif:GPSVersionID/><dc:title><rdf:Alt><rdf:li xml:lang="x-default">GPS tracker test</rdf:li></rdf:Alt></dc:title>' +
      '</rdf:Description></rdf:RDF></x:xmpmeta>'
    const file = await jpegWithXmp(xmp)
    const { out } = strip(file, 'jpeg')
    const after = await xmpOf(out!)
    expect(after.length).toBe(xmp.length)
    expect(after).not.toMatch(XMP_GPS_NAME)
    for (const kept of ['dc:format="image/jpeg"', 'GPS tracker test', '<rdf:RDF xmlns:rdf="r">'])
      expect(after).toContain(kept)
    expect(after).not.toContain('12/1')
    expect(after).not.toContain('0.1275')
  })

  test('XMP that only mentions GPS in text is stored byte for byte', async () => {
    const file = await jpegWithXmp(
      '<x:xmpmeta><rdf:Description><dc:description>GPS off; no location</dc:description></rdf:Description></x:xmpmeta>',
    )
    expect(strip(file, 'jpeg').out).toBeNull()
  })

  test('GPS names that cannot be removed with certainty are refused: in a comment, in UTF-16, under a gps prefix, unclosed', async () => {
    const utf16 = Buffer.from('<x:xmpmeta><rdf:Description exif:GPSLatitude="1"/></x:xmpmeta>', 'utf16le')
    const cases = [
      await jpegWithXmp('<x:xmpmeta><!-- exif:GPSLatitude="51,30N" --></x:xmpmeta>'),
      withJpegSegments(new Uint8Array(await photo().jpeg().toBuffer()), [xmpApp1(concat([[0xff, 0xfe], utf16]))]),
      await jpegWithXmp(
        '<x:xmpmeta><rdf:Description xmlns:gps="g"><gps:lat>51.5</gps:lat></rdf:Description></x:xmpmeta>',
      ),
      await jpegWithXmp('<x:xmpmeta><rdf:Description><exif:GPSLatitude>51,30N'),
    ]
    for (const file of cases) expect(refusal(file, 'jpeg')).toStartWith(LOCATION_UNSAFE)
  })
})

describe('PNG', () => {
  test('XMP in tEXt and iTXt is edited in place, its CRC rewritten', async () => {
    for (const chunk of [
      pngChunk('tEXt', concat(['XML:com.adobe.xmp\0', XMP_WITH_GPS])),
      iTXt('XML:com.adobe.xmp', bytes(XMP_WITH_GPS)),
    ]) {
      const file = withPngChunks(new Uint8Array(await photo().png().toBuffer()), [chunk])
      const { out } = strip(file, 'png')
      expect(out!.length).toBe(file.length)
      expect(Buffer.from(out!).toString('latin1')).not.toMatch(XMP_GPS_NAME)
      expect(await pixels(out!)).toEqual(await pixels(file)) // libpng checks every CRC
    }
  })

  test("ImageMagick's hex raw profiles (exif and xmp) are decoded, cleaned and written back over the same digits", async () => {
    const hex = (b: Uint8Array, name: string) =>
      `\n${name}\n${String(b.length).padStart(8)}\n${Buffer.from(b)
        .toString('hex')
        .replace(/(.{72})/g, '$1\n')}\n`
    const tiff = concat(['Exif\0\0', await realExifTiff()])
    const file = withPngChunks(new Uint8Array(await photo().png().toBuffer()), [
      zTXt('Raw profile type exif', bytes(hex(tiff, 'exif'))),
      pngChunk('tEXt', concat(['Raw profile type xmp\0', hex(bytes(XMP_WITH_GPS), 'xmp')])),
    ])
    const { out } = strip(file, 'png')
    const { texts } = await readPngTexts(out!)
    const exifBack = Buffer.from(texts['Raw profile type exif']!.split('\n').slice(3).join(''), 'hex')
    expect(exifReader(exifBack).GPSInfo).toBeUndefined()
    expect(exifReader(exifBack).Image?.Make).toBe('Acme')
    expect(Buffer.from(texts['Raw profile type xmp']!.split('\n').slice(3).join(''), 'hex').toString()).not.toMatch(
      XMP_GPS_NAME,
    )
    expect(await pixels(out!)).toEqual(await pixels(file))
  })

  test('a cut-off metadata chunk is refused under gps and dropped under all', async () => {
    const png = new Uint8Array(await photo().png().toBuffer())
    const file = concat([png.subarray(0, png.length - 12), pngChunk('eXIf', await realExifTiff()).subarray(0, 60)])
    expect(refusal(file, 'png')).toStartWith(LOCATION_UNSAFE)
    expect(strip(file, 'png', 'all').out!.length).toBe(png.length - 12)
  })
})

/** The text chunks of a PNG, inflated (the test's own reader). */
async function readPngTexts(png: Uint8Array) {
  const { inflateSync } = await import('node:zlib')
  const b = Buffer.from(png)
  const texts: Record<string, string> = {}
  for (let pos = 8; pos + 12 <= b.length; pos += 12 + b.readUInt32BE(pos)) {
    const type = b.toString('latin1', pos + 4, pos + 8)
    const data = b.subarray(pos + 8, pos + 8 + b.readUInt32BE(pos))
    const nul = data.indexOf(0)
    if (type === 'tEXt') texts[data.toString('latin1', 0, nul)] = data.toString('latin1', nul + 1)
    if (type === 'zTXt') texts[data.toString('latin1', 0, nul)] = inflateSync(data.subarray(nul + 2)).toString('latin1')
  }
  return { texts }
}

describe('TIFF', () => {
  test('the GPSInfo pointer leaves IFD0, the GPS directory and values are zeroed, XMP GPS blanked: same length, same pixels', async () => {
    const file = await tiffWithGps()
    expect(exifReader(file).GPSInfo?.GPSLatitude).toEqual([51, 30, 26])
    const { out } = strip(file, 'tiff')
    expect(out!.length).toBe(file.length)
    expect(exifReader(Buffer.from(out!)).GPSInfo).toBeUndefined()
    expect(hasLatitudeBytes(out!)).toBe(false)
    expect(await xmpOf(out!)).not.toMatch(XMP_GPS_NAME)
    expect(await xmpOf(out!)).toContain('<dc:creator>Ann</dc:creator>')
    expect(await pixels(out!)).toEqual(await pixels(file))
    // 'all' removes the XMP block too.
    const all = strip(file, 'tiff', 'all').out!
    expect(exifReader(Buffer.from(all)).GPSInfo).toBeUndefined()
    expect((await sharp(all).metadata()).xmp).toBeUndefined()
    expect(await pixels(all)).toEqual(await pixels(file))
  })

  test('a plain TIFF is stored byte for byte', async () => {
    expect(strip(new Uint8Array(await photo().tiff().toBuffer()), 'tiff').out).toBeNull()
  })

  test('GPS data overlapping image data or a directory, or a directory loop, is refused rather than zeroed', async () => {
    const file = await tiffWithGps()
    const stripOffset = Number(exifReader(file).Image!.StripOffsets)
    const intoPixels = Buffer.from(file)
    const gpsAt = intoPixels.length - 24 - 30
    intoPixels.writeUInt32LE(stripOffset, gpsAt + 2 + 12 + 8) // the latitude's values now "lie" in the strip
    expect(refusal(intoPixels, 'tiff')).toStartWith(LOCATION_UNSAFE)
    const loop = tiffStructure(64, [
      {
        at: 8,
        entries: [
          [0x010f, 2, 4, 0x656d6341],
          [0x8825, 4, 1, 8],
        ],
        next: 8,
      },
    ])
    expect(refusal(loop, 'tiff')).toStartWith(LOCATION_UNSAFE)
  })
})
