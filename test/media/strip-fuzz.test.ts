import { beforeAll, describe, expect, test } from 'bun:test'
import fc from 'fast-check'
import sharp, { type Sharp } from 'sharp'
import { detectFormat } from '../../src/media/detect'
import { Cost, LOCATION_UNSAFE, stripBytes } from '../../src/media/exif'
import type { ImageFormat } from '../../src/media/formats'
import { locationTags, metadataTags, readTagsOf } from './exiftool'
import { heifEnc } from './heic-files'
import { pngChunk } from './helpers'
import {
  bytes,
  concat,
  GPS,
  gpsEntriesTiff,
  photo,
  tiffStructure,
  withJpegSegments,
  withPngChunks,
  XMP_WITH_GPS,
} from './hostile-files'
import { gpsTiff, tiffFile } from './metadata/photos'

// Properties of the stripper over generated hostile files and random mutations of real ones: its cost is linear in
// the file (counted, never timed); what it stores carries no location (nor, under 'all', anything descriptive) for
// exiftool, which reads a sample of the stored files in one run; a clean file is stored byte for byte; the pixels
// never change.

sharp.cache(false)

type Mode = 'gps' | 'all'
interface Case {
  format: ImageFormat
  file: Uint8Array
}

/** The cost bound: 8 units per byte plus a constant (nothing is inflated, every structure is read once). */
const bound = (n: number) => 8 * n + 4096

/** Runs the stripper on a copy; the refusal, if any, must be the stripper's own. */
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
        ' a:GPSz="1"',
        '<d a:GPS="',
        '<rdf:Description ',
        '>',
        '<',
        '"',
        '<!--',
        '<![CDATA[',
        'text ',
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
        fc.constantFrom(0x8825, 0x8769, 0xa005, 0x014a, 0x0190, 0x0111, 0x0117, 700, 0x010f, 0x0112),
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
    if (gpsEntries > 0) return gpsEntriesTiff(gpsEntries, Math.max(size, 64 + gpsEntries * 12))
    const dirEntries = entries.map(
      ([tag, type, count, near, v]): Entry => [tag, type, count, near ? v % size : 8 + (v % 64)],
    )
    return tiffStructure(Math.max(size, 8 + 2 + 12 * dirEntries.length + 4), [
      { at: 8, entries: dirEntries, next: next % 2 ? 8 : next % size },
    ])
  })

/** Exif with GPS under the headers and chunk types readers accept beside the standard one. */
const exifHeader = fc.constantFrom('Exif\0\0', 'EXIF\0\0', 'exif\0\0', 'ab', 'abExif\0\0', 'Exif\0', '')
const pngExifType = fc.constantFrom('eXIf', 'EXIF', 'exif', 'eXIF', 'zxIf', 'tEXt', 'iTXt', 'zTXt', 'prVt', 'IDAT')
const jpegMarker = fc.constantFrom(0xe0, 0xe1, 0xe2, 0xed, 0xee, 0xef, 0xfe, 0xc4, 0xdb, 0xf0, 0x02)

let seeds: Record<'jpeg' | 'png' | 'webp' | 'tiff' | 'avif' | 'gif' | 'heic' | 'svg', Uint8Array>

/** An SVG drawing; as editors save one, with RDF metadata (location), an editor's attributes and a comment. */
const DRAWING = '<g fill="red"><rect width="24" height="16"/><circle cx="8" cy="8" r="4"/></g></svg>\n'
const PLAIN_SVG = `<?xml version="1.0"?>\n<svg xmlns="http://www.w3.org/2000/svg" width="24" height="16">${DRAWING}`
const EDITED_SVG =
  `<?xml version="1.0"?>\n<svg xmlns="http://www.w3.org/2000/svg" xmlns:ed="urn:editor" width="24" height="16" ed:doc="x">` +
  `<!-- at home --><metadata>${XMP_WITH_GPS}</metadata>${DRAWING}`
let plain: Case[]
beforeAll(async () => {
  const image = () => photo(24, 16)
  const u8 = async (s: Sharp) => new Uint8Array(await s.toBuffer())
  const withGps = (s: Sharp) => s.withExif({ IFD0: { Make: 'Acme' }, IFD3: GPS }).withXmp(XMP_WITH_GPS)
  seeds = {
    jpeg: await u8(withGps(image().jpeg())),
    png: await u8(withGps(image().png())),
    webp: await u8(withGps(image().webp())),
    tiff: tiffFile(
      [
        [0x8825, 4, { dir: 'gps' }],
        [0x010f, 2, 'Acme'],
        [0x02bc, 1, XMP_WITH_GPS],
      ],
      {
        gps: [
          [1, 2, 'N'],
          [2, 5, [51, 1, 30, 1, 26, 1]],
        ],
      },
    ),
    avif: await u8(withGps(image().avif())),
    gif: await u8(image().gif().withXmp(XMP_WITH_GPS)),
    // heif-enc carries a JPEG's Exif (GPS included) into the HEIC's Exif item.
    heic: await heifEnc(withGps(image().jpeg()), 'jpeg'),
    svg: bytes(EDITED_SVG),
  }
  plain = []
  plain.push({ format: 'heic', file: await heifEnc(image()) }, { format: 'svg', file: bytes(PLAIN_SVG) })
  for (const format of ['jpeg', 'png', 'webp', 'tiff', 'avif', 'gif'] as const) {
    plain.push({ format, file: await u8(image().toFormat(format)) })
    if (format !== 'gif') {
      const exif = image()
        .toFormat(format)
        .withExif({ IFD0: { Make: 'Acme', Software: 'x' } })
      plain.push({ format, file: await u8(exif) })
    }
  }
})

/** A container of each format around hostile metadata. */
const hostile: fc.Arbitrary<Case> = fc.oneof(
  fc.tuple(xmpText, fc.constantFrom('jpeg', 'png', 'webp')).map(([xmp, where]) => wrap(where, 'xmp', xmp)),
  fc.tuple(tiffShape, fc.constantFrom('jpeg', 'png', 'webp', 'tiff')).map(([tiff, where]) => wrap(where, 'exif', tiff)),
  // Exif with GPS under another header, chunk type or marker, beside a trailer.
  fc.tuple(exifHeader, pngExifType, fc.boolean()).map(([header, type, trailer]): Case => {
    const png = withPngChunks(seeds.png, [pngChunk(type, concat([header, gpsTiff()]))])
    return {
      format: 'png',
      file: trailer ? concat([png, pngChunk('tEXt', concat(['exif:GPSLatitude\0', '51/1']))]) : png,
    }
  }),
  fc.tuple(exifHeader, jpegMarker, fc.boolean()).map(([header, marker, trailer]): Case => {
    const jpeg = withJpegSegments(seeds.jpeg, [[marker, concat([header, gpsTiff()])]])
    return { format: 'jpeg', file: trailer ? concat([jpeg, seeds.jpeg]) : jpeg }
  }),
)

function wrap(where: string, kind: 'xmp' | 'exif', data: Uint8Array): Case {
  const payload = data.subarray(0, 65_000)
  if (where === 'jpeg') {
    const header = kind === 'xmp' ? 'http://ns.adobe.com/xap/1.0/\0' : 'Exif\0\0'
    return { format: 'jpeg', file: withJpegSegments(seeds.jpeg, [[0xe1, concat([header, payload])]]) }
  }
  if (where === 'png') {
    const chunk =
      kind === 'xmp' ? pngChunk('iTXt', concat(['XML:com.adobe.xmp', [0, 0, 0, 0, 0], data])) : pngChunk('eXIf', data)
    return { format: 'png', file: withPngChunks(seeds.png, [chunk]) }
  }
  if (where === 'webp')
    return { format: 'webp', file: withWebpChunk(seeds.webp, kind === 'xmp' ? 'XMP ' : 'EXIF', data) }
  return { format: 'tiff', file: data }
}

function withWebpChunk(webp: Uint8Array, type: string, data: Uint8Array): Uint8Array {
  const head = Buffer.alloc(8)
  head.write(type, 0, 'latin1')
  head.writeUInt32LE(data.length, 4)
  const out = Buffer.from(concat([webp, head, data, data.length & 1 ? [0] : []]))
  out.writeUInt32LE(out.length - 8, 4)
  return out
}

/**
 * Random edits of a real file with location: bytes set, inserted, deleted, and ranges duplicated, after its first 16
 * bytes (a file whose signature is broken is no longer detected as an image, so never reaches the stripper).
 */
const mutant: fc.Arbitrary<Case> = fc
  .tuple(
    fc.constantFrom('jpeg', 'png', 'webp', 'tiff', 'avif', 'gif', 'heic', 'svg'),
    fc.array(
      fc.tuple(
        fc.constantFrom('set', 'insert', 'delete', 'duplicate'),
        fc.double({ min: 0, max: 1, noNaN: true }),
        fc.nat(255),
        fc.integer({ min: 1, max: 64 }),
      ),
      { minLength: 1, maxLength: 6 },
    ),
  )
  .map(([format, edits]) => {
    let b = Buffer.from(seeds[format as keyof typeof seeds])
    for (const [op, where, value, length] of edits) {
      const at = 16 + Math.floor(where * (b.length - 16))
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
  test('costs at most 8n + 4096 units for a file of n bytes, in both modes', () => {
    fc.assert(
      fc.property(fc.oneof(hostile, mutant), fc.constantFrom<Mode>('gps', 'all'), (c, mode) => {
        const { cost } = run(c, mode)
        expect({ format: c.format, n: c.file.length, cost }).toEqual({
          format: c.format,
          n: c.file.length,
          cost: Math.min(cost, bound(c.file.length)),
        })
      }),
      { numRuns: 400 },
    )
  })

  test('a sample of what it stores carries no location for exiftool (nothing descriptive under all), same pixels', async () => {
    const seed = Date.now() // printed with any failure, to replay it: fc.sample(..., { seed })
    const sample = fc.sample(fc.tuple(fc.oneof(hostile, mutant), fc.constantFrom<Mode>('gps', 'all')), {
      numRuns: 300,
      seed,
    })
    const withSeeds = [
      ...sample,
      ...Object.entries(seeds).flatMap(([format, file]) =>
        (['gps', 'all'] as const).map((mode): [Case, Mode] => [{ format: format as ImageFormat, file }, mode]),
      ),
    ]
    // What an upload would reach the stripper with: detected as its format (a mutant that is not is refused before).
    const stored = withSeeds
      .filter(([c]) => detectFormat(c.file) === c.format)
      .map(([c, mode]) => ({ c, mode, ...run(c, mode) }))
      .filter((r) => !r.refused && r.stored.length < 1 << 20)
    expect(stored.length).toBeGreaterThan(withSeeds.length / 2)
    const tags = await readTagsOf(stored.map((r) => r.stored))
    for (const [i, r] of stored.entries()) {
      const label = { seed, i, format: r.c.format, mode: r.mode }
      expect({ ...label, location: locationTags(tags[i]!) }).toEqual({ ...label, location: [] })
      if (r.mode === 'all') expect({ ...label, metadata: metadataTags(tags[i]!) }).toEqual({ ...label, metadata: [] })
      if (!r.changed) continue
      const before = await decodes(r.c.file)
      if (before)
        expect({ ...label, same: (await decodes(r.stored))?.equals(before) }).toEqual({ ...label, same: true })
    }
  })

  test('a file without location is stored byte for byte', () => {
    fc.assert(
      fc.property(fc.integer({ min: 0, max: plain.length - 1 }), (i) => {
        expect({ format: plain[i]!.format, ...run(plain[i]!, 'gps') }).toMatchObject({
          format: plain[i]!.format,
          refused: false,
          changed: false,
        })
      }),
      { numRuns: plain.length * 2 },
    )
  })
})
