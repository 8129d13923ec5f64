import { beforeAll, describe, expect, test } from 'bun:test'
import exifReader from 'exif-reader'
import fc from 'fast-check'
import sharp, { type Sharp } from 'sharp'
import { Cost, LOCATION_UNSAFE, stripBytes } from '../../src/media/exif'
import type { ImageFormat } from '../../src/media/formats'
import { pngChunk } from './helpers'
import {
  bytes,
  concat,
  exifApp1,
  GPS,
  gpsEntriesTiff,
  iTXt,
  photo,
  tiffStructure,
  tiffWithGps,
  withJpegSegments,
  withPngChunks,
  XMP_GPS_NAME,
  XMP_WITH_GPS,
  xmpApp1,
  zTXt,
} from './hostile-files'

// Properties of the stripper over generated hostile files and random mutations of real ones: its cost is linear in
// the file (counted, never timed), what it stores never carries GPS for any reader, a file without location is
// stored byte for byte, and the pixels never change.

sharp.cache(false)

type Mode = 'gps' | 'all'
interface Case {
  format: ImageFormat
  file: Uint8Array
}

/**
 * The cost bound: 8 units per byte plus a constant; PNG also inflates compressed text within its budget (64 KiB plus
 * 64 bytes per byte of the file), each inflated byte again at most 8 units.
 */
function bound(format: ImageFormat, n: number): number {
  const inflated = format === 'png' ? 64 * 1024 + 64 * n : 0
  return 8 * (n + inflated) + 4096
}

/** Runs the stripper on a copy; the refusal, if any, must be the location one. */
function run(c: Case, mode: Mode) {
  const cost = new Cost()
  try {
    const out = stripBytes(c.file.slice(), c.format, mode, cost)
    return { refused: false, stored: out ?? c.file, changed: out !== null, cost: cost.units }
  } catch (err) {
    expect((err as Error).message).toStartWith(LOCATION_UNSAFE)
    return { refused: true, stored: c.file, changed: false, cost: cost.units }
  }
}

/** GPS as independent readers see it: exif-reader on the Exif that libvips extracts (or on a TIFF file), XMP names. */
async function readableGps(format: ImageFormat, file: Uint8Array): Promise<string | null> {
  const exifs: Buffer[] = []
  let xmp = ''
  try {
    const meta = await sharp(file).metadata()
    if (meta.exif) exifs.push(meta.exif)
    xmp = meta.xmpAsString ?? ''
  } catch {
    // not readable by libvips: nothing it could show
  }
  if (format === 'tiff') exifs.push(Buffer.from(file))
  for (const exif of exifs) {
    let gps: unknown
    try {
      gps = exifReader(exif).GPSInfo
    } catch {
      continue // exif-reader cannot read it: no GPS for it either
    }
    if (gps && Object.keys(gps).length > 0) return `Exif GPS ${JSON.stringify(gps)}`
  }
  return XMP_GPS_NAME.test(xmp) ? `XMP ${xmp}` : null
}

async function decodes(file: Uint8Array): Promise<Buffer | null> {
  try {
    return await sharp(file, { failOn: 'error' }).raw().toBuffer()
  } catch {
    return null
  }
}

// --- Generators -----------------------------------------------------------------------------------------------

/** XMP-like text from pieces an attacker repeats: GPS elements and attributes, unterminated tags, quotes, comments. */
const xmpText = fc
  .array(
    fc.tuple(
      fc.constantFrom(
        '<a:GPS>',
        '</a:GPS>',
        '<a:GPSx>v</a:GPSx>',
        '<a:GPSy/>',
        ' a:GPSz="1"',
        " b:Gps='2'",
        '<d ',
        '<d a:GPS="',
        '<rdf:Description ',
        '>',
        '/>',
        '<',
        '"',
        "'",
        '<!--',
        '-->',
        '<![CDATA[',
        ']]>',
        '<?x ',
        '?>',
        'text ',
        '=',
        '\n',
        '<exif:GPSLatitude>51N</exif:GPSLatitude>',
      ),
      fc.integer({ min: 1, max: 2000 }),
    ),
    { maxLength: 12 },
  )
  .map((pieces) => bytes(pieces.map(([s, n]) => s.repeat(n)).join('')))

type Entry = [number, number, number, number]
/** A TIFF structure with huge counts, values overlapping each other and the directories, and loops between IFDs. */
const tiffShape = fc
  .record({
    size: fc.integer({ min: 32, max: 200_000 }),
    gpsEntries: fc.integer({ min: 0, max: 3000 }),
    entries: fc.array(
      fc.tuple(
        fc.constantFrom(0x8825, 0x8769, 0xa005, 0x014a, 0x0111, 0x0117, 700, 0x010f, 0x0112),
        fc.integer({ min: 0, max: 14 }),
        fc.oneof(fc.integer({ min: 0, max: 100 }), fc.integer({ min: 0, max: 0xffffffff })),
        fc.integer({ min: 0, max: 1 }), // value: 0 -> an offset near the start (loops, directories), 1 -> anywhere
        fc.nat(),
      ),
      { maxLength: 40 },
    ),
    next: fc.nat(),
  })
  .map(({ size, gpsEntries, entries, next }) => {
    if (gpsEntries > 0) {
      const t = gpsEntriesTiff(gpsEntries, Math.max(size, 64 + gpsEntries * 12))
      return t
    }
    const dirEntries = entries.map(
      ([tag, type, count, near, v]): Entry => [tag, type, count, near ? v % size : 8 + (v % 64)],
    )
    return tiffStructure(Math.max(size, 8 + 2 + 12 * dirEntries.length + 4), [
      { at: 8, entries: dirEntries, next: next % 2 ? 8 : next % size },
    ])
  })

let seeds: Record<'jpeg' | 'png' | 'webp' | 'tiff' | 'avif', Uint8Array>
let plain: Case[]
beforeAll(async () => {
  const image = () => photo(24, 16)
  const u8 = async (s: Sharp) => new Uint8Array(await s.toBuffer())
  seeds = {
    jpeg: await u8(
      image()
        .jpeg()
        .withExif({ IFD0: { Make: 'Acme' }, IFD3: GPS })
        .withXmp(XMP_WITH_GPS),
    ),
    png: await u8(
      image()
        .png()
        .withExif({ IFD0: { Make: 'Acme' }, IFD3: GPS })
        .withXmp(XMP_WITH_GPS),
    ),
    webp: await u8(
      image()
        .webp()
        .withExif({ IFD0: { Make: 'Acme' }, IFD3: GPS })
        .withXmp(XMP_WITH_GPS),
    ),
    tiff: new Uint8Array(await tiffWithGps()),
    avif: await u8(
      image()
        .avif()
        .withExif({ IFD0: { Make: 'Acme' }, IFD3: GPS })
        .withXmp(XMP_WITH_GPS),
    ),
  }
  const xmp =
    '<x:xmpmeta><rdf:Description xmlns:dc="d" dc:format="image/jpeg"><dc:title>GPS off</dc:title></rdf:Description></x:xmpmeta>'
  plain = []
  for (const format of ['jpeg', 'png', 'webp', 'tiff', 'avif'] as const) {
    plain.push({ format, file: await u8(image().toFormat(format)) })
    plain.push({
      format,
      file: await u8(
        image()
          .toFormat(format)
          .withExif({ IFD0: { Make: 'Acme', Software: 'x' } })
          .withXmp(xmp),
      ),
    })
  }
})

/** A container of each format around hostile metadata. */
const hostile: fc.Arbitrary<Case> = fc.oneof(
  fc
    .tuple(xmpText, fc.constantFrom('jpeg', 'png-z', 'png-i', 'webp', 'avif-like'))
    .map(([xmp, where]) => wrapXmp(xmp, where)),
  fc.tuple(tiffShape, fc.constantFrom('jpeg', 'png', 'webp', 'tiff')).map(([tiff, where]) => wrapTiff(tiff, where)),
)

function wrapXmp(xmp: Uint8Array, where: string): Case {
  if (where === 'jpeg')
    return { format: 'jpeg', file: withJpegSegments(seeds.jpeg, [xmpApp1(xmp.subarray(0, 65_000))]) }
  if (where === 'png-z') return { format: 'png', file: withPngChunks(seeds.png, [zTXt('XML:com.adobe.xmp', xmp)]) }
  if (where === 'png-i') return { format: 'png', file: withPngChunks(seeds.png, [iTXt('XML:com.adobe.xmp', xmp)]) }
  if (where === 'webp') return { format: 'webp', file: withWebpChunk(seeds.webp, 'XMP ', xmp) }
  // An AVIF's XMP item replaced by the text (same length, so the layout stays valid).
  const file = Buffer.from(seeds.avif)
  const at = file.indexOf('<x:xmpmeta')
  file.set(xmp.subarray(0, XMP_WITH_GPS.length), at)
  return { format: 'avif', file }
}

function wrapTiff(tiff: Uint8Array, where: string): Case {
  if (where === 'jpeg')
    return { format: 'jpeg', file: withJpegSegments(seeds.jpeg, [exifApp1(tiff.subarray(0, 65_000))]) }
  if (where === 'png') return { format: 'png', file: withPngChunks(seeds.png, [pngChunk('eXIf', tiff)]) }
  if (where === 'webp') return { format: 'webp', file: withWebpChunk(seeds.webp, 'EXIF', tiff) }
  return { format: 'tiff', file: tiff }
}

function withWebpChunk(webp: Uint8Array, type: string, data: Uint8Array): Uint8Array {
  const head = Buffer.alloc(8)
  head.write(type, 0, 'latin1')
  head.writeUInt32LE(data.length, 4)
  const out = Buffer.from(concat([webp, head, data, data.length & 1 ? [0] : []]))
  out.writeUInt32LE(out.length - 8, 4)
  return out
}

/** Random edits of a real file with location: bytes set, inserted, deleted, and ranges duplicated. */
const mutant: fc.Arbitrary<Case> = fc
  .tuple(
    fc.constantFrom('jpeg', 'png', 'webp', 'tiff', 'avif'),
    fc.array(
      fc.tuple(
        fc.constantFrom('set', 'insert', 'delete', 'duplicate'),
        fc.double({ min: 0, max: 1, noNaN: true }),
        fc.nat(255),
        fc.integer({ min: 1, max: 64 }),
      ),
      {
        minLength: 1,
        maxLength: 6,
      },
    ),
  )
  .map(([format, edits]) => {
    let b = Buffer.from(seeds[format as keyof typeof seeds])
    for (const [op, where, value, length] of edits) {
      const at = Math.floor(where * b.length)
      if (op === 'set') b[at] = value
      if (op === 'insert') b = Buffer.concat([b.subarray(0, at), Buffer.alloc(length, value), b.subarray(at)])
      if (op === 'delete') b = Buffer.concat([b.subarray(0, at), b.subarray(at + length)])
      if (op === 'duplicate')
        b = Buffer.concat([b.subarray(0, at + length), b.subarray(at, at + length), b.subarray(at + length)])
    }
    return { format: format as ImageFormat, file: new Uint8Array(b) }
  })

// --- Properties -------------------------------------------------------------------------------------------------

describe('the stripper over hostile and mutated files', () => {
  test('costs at most a*n + b units for a file of n bytes, in both modes', () => {
    fc.assert(
      fc.property(fc.oneof(hostile, mutant), fc.constantFrom<Mode>('gps', 'all'), (c, mode) => {
        const { cost } = run(c, mode)
        expect({ format: c.format, n: c.file.length, cost }).toEqual({
          format: c.format,
          n: c.file.length,
          cost: Math.min(cost, bound(c.format, c.file.length)),
        })
      }),
      { numRuns: 400 },
    )
  })

  test('stores no GPS any reader can find, and never changes a pixel', async () => {
    await fc.assert(
      fc.asyncProperty(
        fc.oneof(
          hostile,
          mutant,
          fc.constantFrom(...Object.entries(seeds)).map(([format, file]) => ({ format: format as ImageFormat, file })),
        ),
        fc.constantFrom<Mode>('gps', 'all'),
        async (c, mode) => {
          const { refused, stored, changed } = run(c, mode)
          if (refused) return
          expect(await readableGps(c.format, stored)).toBeNull()
          if (!changed) return
          const before = await decodes(c.file)
          if (before) expect((await decodes(stored))?.equals(before)).toBe(true)
        },
      ),
      { numRuns: 250 },
    )
  })

  test('a file without location is stored byte for byte', () => {
    fc.assert(
      fc.property(fc.integer({ min: 0, max: plain.length - 1 }), (i) => {
        expect(run(plain[i]!, 'gps')).toMatchObject({ refused: false, changed: false })
      }),
      { numRuns: plain.length * 2 },
    )
  })
})
