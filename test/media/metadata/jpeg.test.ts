import { afterAll, beforeAll, describe, expect, test } from 'bun:test'
import sharp from 'sharp'
import { LOCATION_UNSAFE } from '../../../src/media/exif'
import { scratchDir } from '../helpers'
import { concat, photo, withJpegSegments } from '../hostile-files'
import { contains, refusal, run, strip } from './containers'
import { craftedJpegs } from './crafted'
import { gpsTiff, jpegScan, judgePhotos, toolCorpus } from './photos'

// JPEG rebuilt from its picture segments, JFIF, ICC and Adobe, with Exif through cleanExif; judged by exiftool.

sharp.cache(false)

let scratch: Awaited<ReturnType<typeof scratchDir>>
beforeAll(async () => {
  scratch = await scratchDir()
})
afterAll(() => scratch.cleanup())

const base = async (seed = 1) => new Uint8Array(await photo(32, 24, seed).jpeg().toBuffer())

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

  test('a file that ends without EOI gets one: a strict decoder reads what a lenient one read from the original', async () => {
    const file = Buffer.from(await base())
    const eoi = file.length - 2
    const decode = (b: Uint8Array, failOn: 'error' | 'none') => sharp(b, { failOn }).raw().toBuffer()
    // Cut inside the scan (the rest reads as grey), and the EOI marker turned into a stray one (TEM, 0xFF01).
    for (const ending of [file.subarray(0, eoi - 40), concat([file.subarray(0, eoi), [0xff, 0x01]])]) {
      const { out } = strip(ending, 'jpeg', 'gps')
      expect(Buffer.from(out!).subarray(-2)).toEqual(Buffer.from([0xff, 0xd9]))
      expect(await decode(out!, 'error')).toEqual(await decode(ending, 'none'))
    }
  })

  test('a JPEG whose picture cannot be walked is refused: no SOI, no scan, a segment past the end', async () => {
    const file = await base()
    expect(refusal(file.subarray(2), 'jpeg')).toBe(`${LOCATION_UNSAFE} (not a JPEG)`)
    const scan = Buffer.from(file).indexOf(Buffer.from([0xff, 0xda]))
    expect(refusal(file.subarray(0, scan), 'jpeg')).toBe(`${LOCATION_UNSAFE} (a JPEG without a frame header or scan)`)
    const cut = withJpegSegments(file, [[0xe1, concat(['Exif\0\0', gpsTiff()])]]).subarray(0, 40)
    for (const mode of ['gps', 'all'] as const)
      expect(refusal(cut, 'jpeg', mode)).toBe(`${LOCATION_UNSAFE} (a JPEG segment that runs past the end of the file)`)
  })
})
