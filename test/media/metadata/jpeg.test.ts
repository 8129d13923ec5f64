import { afterAll, beforeAll, describe, expect, test } from 'bun:test'
import sharp from 'sharp'
import { LOCATION_UNSAFE } from '../../../src/media/exif'
import { scratchDir } from '../helpers'
import {
  buildTiff,
  bytes,
  concat,
  photo,
  strayZeroJpeg,
  withJpegSegments,
  XMP_WITH_GPS,
  xmpApp1,
} from '../hostile-files'
import { contains, refusal, run, strip } from './containers'
import { exifIrb, gpsTiff, jpegScan, judgePhotos, type Sample, toolCorpus } from './photos'

// JPEG rebuilt from its picture segments, JFIF, ICC and Adobe, with Exif through cleanExif; judged by exiftool.

sharp.cache(false)

let scratch: Awaited<ReturnType<typeof scratchDir>>
beforeAll(async () => {
  scratch = await scratchDir()
})
afterAll(() => scratch.cleanup())

type Bytes = Uint8Array<ArrayBuffer>
const base = async (seed = 1): Promise<Bytes> => new Uint8Array(await photo(32, 24, seed).jpeg().toBuffer())
const jpeg = (header: string, tiff: Uint8Array): [number, Uint8Array] => [0xe1, concat([header, tiff])]

/**
 * Multi-Picture Format as phones write it: an MPF APP2 segment whose index points at a second JPEG after the first
 * one's EOI (here one with GPS, which exiftool reads with -ee).
 */
function withMpf(first: Uint8Array, second: Uint8Array): Bytes {
  const tiff = Buffer.alloc(8 + 2 + 3 * 12 + 4 + 32)
  tiff.write('MM\0*', 0, 'latin1')
  tiff.writeUInt32BE(8, 4)
  tiff.writeUInt16BE(3, 8)
  const entry = (i: number, tag: number, type: number, count: number, value: number | string) => {
    const at = 10 + i * 12
    tiff.writeUInt16BE(tag, at)
    tiff.writeUInt16BE(type, at + 2)
    tiff.writeUInt32BE(count, at + 4)
    if (typeof value === 'string') tiff.write(value, at + 8, 'latin1')
    else tiff.writeUInt32BE(value, at + 8)
  }
  const entries = 8 + 2 + 3 * 12 + 4
  entry(0, 0xb000, 7, 4, '0100') // MPFVersion
  entry(1, 0xb001, 4, 1, 2) // NumberOfImages
  entry(2, 0xb002, 7, 32, entries) // MPEntry
  const segmentLength = 2 + 4 + tiff.length
  const firstLength = first.length + 2 + segmentLength
  const tiffStart = 2 + 4 + 4 // in the file: SOI, the segment's marker and length, "MPF\0"
  tiff.writeUInt32BE(0x030000, entries) // the primary image
  tiff.writeUInt32BE(firstLength, entries + 4)
  tiff.writeUInt32BE(second.length, entries + 16 + 4)
  tiff.writeUInt32BE(firstLength - tiffStart, entries + 16 + 8)
  return withJpegSegments(concat([first, second]), [[0xe2, concat(['MPF\0', tiff])]]) as Bytes
}

/** Extended XMP: a packet naming its GUID, and the extension (GPS) cut into two APP1 parts at byte offsets. */
function extendedXmp(): [number, Uint8Array][] {
  const rdf = (inner: string) =>
    `<x:xmpmeta xmlns:x="adobe:ns:meta/"><rdf:RDF xmlns:rdf="http://www.w3.org/1999/02/22-rdf-syntax-ns#">${inner}</rdf:RDF></x:xmpmeta>`
  const guid = 'A'.repeat(32)
  const main = rdf(`<rdf:Description xmlns:xmpNote="http://ns.adobe.com/xmp/note/" xmpNote:HasExtendedXMP="${guid}"/>`)
  const extension = bytes(
    rdf('<rdf:Description xmlns:exif="http://ns.adobe.com/exif/1.0/" exif:GPSLatitude="51,30.43N"/>'),
  )
  const cut = extension.length >> 1
  const part = (offset: number, data: Uint8Array): [number, Uint8Array] => {
    const head = Buffer.alloc(8)
    head.writeUInt32BE(extension.length, 0)
    head.writeUInt32BE(offset, 4)
    return [0xe1, concat(['http://ns.adobe.com/xmp/extension/\0', guid, head, data])]
  }
  return [xmpApp1(bytes(main)), part(0, extension.subarray(0, cut)), part(cut, extension.subarray(cut))]
}

/** The crafted forms of the issue, each read by exiftool as carrying location before the strip. */
async function craftedJpegs(): Promise<Sample[]> {
  const tiff = gpsTiff()
  const cut = 8 + 2 + 2 * 12 + 4 + 6 // IFD0 and Make's value in the first segment, the GPS directory in the second
  const global = buildTiff({
    ifd0: [
      [0x010f, 2, 'Acme'],
      [0x0190, 4, { dir: 'global' }],
    ],
    global: [[0x8825, 4, { dir: 'gps' }]],
    gps: [
      [0x0001, 2, 'N'],
      [0x0002, 5, [51, 1, 30, 1, 26, 1]],
    ],
  })
  const badMagic = Buffer.from(tiff)
  badMagic.writeUInt16LE(0xff, 2)
  const withGps = new Uint8Array(
    await photo(16, 16, 5)
      .jpeg()
      .withExif({ IFD0: { Make: 'Acme' }, IFD3: { GPSLatitudeRef: 'N', GPSLatitude: '51/1 30/1 26/1' } })
      .toBuffer(),
  )
  const samples: [string, [number, Uint8Array][] | Bytes][] = [
    [
      'Exif split over two APP1 segments',
      [jpeg('Exif\0\0', tiff.subarray(0, cut)), jpeg('Exif\0\0', tiff.subarray(cut))],
    ],
    ['Photoshop resource 0x0422 (Exif) in APP13', [[0xed, concat(['Photoshop 3.0\0', exifIrb(tiff)])]]],
    ['an APP1 "EXIF" header', [jpeg('EXIF\0\0', tiff)]],
    ['an APP1 "exif" header', [jpeg('exif\0\0', tiff)]],
    ['bytes before "Exif" in APP1', [jpeg('ab', concat(['Exif\0\0', tiff]))]],
    ['GPS under GlobalParametersIFD', [jpeg('Exif\0\0', global)]],
    ['a TIFF header whose magic is not 42', [jpeg('Exif\0\0', badMagic)]],
    ['XMP with GPS and a comment', [xmpApp1(bytes(XMP_WITH_GPS)), [0xfe, bytes('Soho')]]],
    ['extended XMP with GPS, in two parts', extendedXmp()],
    ['an image with GPS after EOI, indexed by MPF', withMpf(await base(), withGps)],
    ['a stray 00 and fill bytes between markers', (await strayZeroJpeg()) as Bytes],
  ]
  return Promise.all(
    samples.map(async ([name, x]) => ({
      name,
      format: 'jpeg' as const,
      file: Array.isArray(x) ? (withJpegSegments(await base(), x) as Bytes) : x,
    })),
  )
}

describe('JPEG', () => {
  test('files written by exiftool and ImageMagick: no location stored, camera tags kept under gps, same pixels and scan data', async () => {
    const tools = (await toolCorpus(scratch.dir)).filter((s) => s.format === 'jpeg')
    for (const j of await judgePhotos(tools)) {
      expect([j.name, contains(j.stored, jpegScan(j.original))]).toEqual([j.name, true])
      if (j.mode === 'gps' && j.name.startsWith('exiftool')) {
        for (const tag of ['IFD0:Make', 'IFD0:Model', 'ExifIFD:DateTimeOriginal'])
          expect([tag, j.after[tag]]).toEqual([tag, j.before[tag]])
        expect(j.after['ExifIFD:UserComment']).toBeUndefined()
      }
    }
  })

  test("the issue's crafted forms: split Exif, Photoshop's Exif, EXIF/exif headers, GlobalParametersIFD, magic, MPF", async () => {
    const crafted = await craftedJpegs()
    for (const j of await judgePhotos(crafted)) {
      expect([j.name, contains(j.stored, jpegScan(j.original))]).toEqual([j.name, true])
      // Nothing after the first image's EOI is kept.
      expect([j.name, Buffer.from(j.stored).lastIndexOf(Buffer.from([0xff, 0xd9]))]).toEqual([
        j.name,
        j.stored.length - 2,
      ])
    }
  })

  test('a file with nothing to drop is kept byte for byte: plain, with ICC, with JFIF; with Exif of kept tags under gps', async () => {
    const plain = await base()
    const icc = new Uint8Array(await photo(32, 24).jpeg().withIccProfile('p3').toBuffer())
    await Bun.write(scratch.path('plain.jpg'), plain)
    await run(['convert', scratch.path('plain.jpg'), '-strip', scratch.path('jfif.jpg')])
    const jfif = new Uint8Array(await Bun.file(scratch.path('jfif.jpg')).arrayBuffer())
    expect(Buffer.from(jfif).indexOf('JFIF')).toBe(6)
    for (const file of [plain, icc, jfif])
      for (const mode of ['gps', 'all'] as const) expect(strip(file, 'jpeg', mode).out).toBeNull()
    const camera = new Uint8Array(
      await photo(32, 24)
        .jpeg()
        .withExif({ IFD0: { Make: 'Acme', Model: 'X100' } })
        .toBuffer(),
    )
    expect(strip(camera, 'jpeg', 'gps').out).toBeNull()
    expect(strip(camera, 'jpeg', 'all').out).not.toBeNull()
  })

  test('a JFIF thumbnail is dropped, its header kept', async () => {
    const thumb = Buffer.alloc(14 + 2 * 2 * 3, 0x77)
    thumb.write('JFIF\0', 0, 'latin1')
    thumb.set([1, 2, 1, 0, 72, 0, 72, 2, 2], 5)
    const file = withJpegSegments(await base(), [[0xe0, thumb]])
    const { out } = strip(file, 'jpeg', 'gps')
    expect(Buffer.from(out!).subarray(2, 20)).toEqual(Buffer.from([0xff, 0xe0, 0, 16, ...thumb.subarray(0, 12), 0, 0]))
  })

  test('a JPEG whose picture cannot be walked is refused: no scan, a segment past the end', async () => {
    const file = await base()
    const scan = Buffer.from(file).indexOf(Buffer.from([0xff, 0xda]))
    expect(refusal(file.subarray(0, scan), 'jpeg')).toBe(`${LOCATION_UNSAFE} (a JPEG without a frame header or scan)`)
    const cut = withJpegSegments(file, [[0xe1, concat(['Exif\0\0', gpsTiff()])]]).subarray(0, 40)
    for (const mode of ['gps', 'all'] as const)
      expect(refusal(cut, 'jpeg', mode)).toBe(`${LOCATION_UNSAFE} (a JPEG segment that runs past the end of the file)`)
  })
})
