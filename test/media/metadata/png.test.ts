import { afterAll, beforeAll, describe, expect, test } from 'bun:test'
import { deflateSync } from 'node:zlib'
import sharp from 'sharp'
import { LOCATION_UNSAFE, stripMetadata } from '../../../src/media/exif'
import { pngChunk, scratchDir } from '../helpers'
import { bytes, concat, gpsEntriesPng, photo, tinyPng, withPngChunks, XMP_WITH_GPS, xmpBombPng } from '../hostile-files'
import { refusal, strip } from './containers'
import {
  apng,
  exifIrb,
  gpsTiff,
  judgePhotos,
  pngChunks,
  rawProfile,
  type Sample,
  tEXt,
  toolCorpus,
  zTXt,
} from './photos'

// PNG and APNG rebuilt from the chunks of the picture, its colour and its animation, with eXIf through cleanExif;
// judged by exiftool.

sharp.cache(false)

let scratch: Awaited<ReturnType<typeof scratchDir>>
beforeAll(async () => {
  scratch = await scratchDir()
})
afterAll(() => scratch.cleanup())

type Bytes = Uint8Array<ArrayBuffer>
const base = async (seed = 1): Promise<Bytes> => new Uint8Array(await photo(24, 16, seed).png().toBuffer())
const typesOf = (png: Uint8Array) => pngChunks(png).map((c) => c.type)

/** The crafted forms of the issue, each read by exiftool as carrying location before the strip. */
async function craftedPngs(): Promise<Sample[]> {
  // Orientation only where a PNG reader would take it (eXIf); other chunk types are never shown turned.
  const tiff = gpsTiff()
  const turned = gpsTiff([[0x0112, 3, [6]]])
  const xmp = bytes(XMP_WITH_GPS)
  const u32 = (n: number) => {
    const b = Buffer.alloc(4)
    b.writeUInt32BE(n)
    return b
  }
  const samples: [string, Uint8Array[]][] = [
    ['eXIf starting with "Exif\\0\\0"', [pngChunk('eXIf', concat(['Exif\0\0', turned]))]],
    ['an eXIf chunk typed "EXIF"', [pngChunk('EXIF', tiff)]],
    ['an eXIf chunk typed "exif"', [pngChunk('exif', tiff)]],
    ['a compressed Exif chunk (zxIf)', [pngChunk('zxIf', concat([[0], u32(tiff.length), deflateSync(tiff)]))]],
    [
      'iTXt XMP with compression flag 2',
      [pngChunk('iTXt', concat(['XML:com.adobe.xmp\0', [2, 0, 0, 0], deflateSync(xmp)]))],
    ],
    ['iTXt XMP, uncompressed', [pngChunk('iTXt', concat(['XML:com.adobe.xmp\0', [0, 0, 0, 0], xmp]))]],
    [
      'Raw profile type 8bim holding Photoshop Exif (0x0422)',
      [zTXt('Raw profile type 8bim', rawProfile('8bim', exifIrb(tiff)))],
    ],
    [
      'Raw profile type exif, "Exif\\0\\0" first',
      [tEXt('Raw profile type exif', rawProfile('exif', concat(['Exif\0\0', tiff])))],
    ],
    ['Raw profile type APP1', [zTXt('Raw profile type APP1', rawProfile('APP1', concat(['Exif\0\0', tiff])))]],
    [
      'tEXt exif:GPSLatitude and xmp:GPSLongitude',
      [tEXt('exif:GPSLatitude', '51/1, 30/1, 0/1'), tEXt('xmp:GPSLongitude', '0,7.2W')],
    ],
  ]
  const out: Sample[] = await Promise.all(
    samples.map(async ([name, chunks]) => ({
      name,
      format: 'png' as const,
      file: withPngChunks(await base(), chunks) as Bytes,
    })),
  )
  // exiftool reads chunks after IEND too (its Trailer group).
  out.push({
    name: 'a text chunk after IEND',
    format: 'png',
    file: concat([await base(), tEXt('exif:GPSLatitude', '51/1')]) as Bytes,
  })
  return out
}

describe('PNG', () => {
  test('files written by exiftool and by convert photo.jpg photo.png: no location stored, same pixels, Orientation kept', async () => {
    const tools = (await toolCorpus(scratch.dir)).filter((s) => s.format === 'png')
    for (const j of await judgePhotos(tools)) {
      const kept = typesOf(j.stored).filter((t) => !['IHDR', 'IDAT', 'IEND'].includes(t))
      expect([
        j.name,
        kept.filter((t) => !['gAMA', 'cHRM', 'bKGD', 'pHYs', 'eXIf', 'PLTE', 'tRNS'].includes(t)),
      ]).toEqual([j.name, []])
      // libpng checks every CRC while decoding: the rebuilt eXIf is a valid chunk.
      if (j.mode === 'gps') expect([j.name, j.after['IFD0:Make']]).toEqual([j.name, 'Acme'])
    }
  })

  test("the issue's crafted forms: eXIf with a prefix, other cases and compressed types, iTXt flags, raw profiles, after IEND", async () => {
    const crafted = await craftedPngs()
    for (const j of await judgePhotos(crafted)) {
      const last = pngChunks(j.stored).at(-1)!
      expect([j.name, last.type, Buffer.from(j.stored).subarray(-12)]).toEqual([
        j.name,
        'IEND',
        Buffer.from(pngChunk('IEND', new Uint8Array())),
      ])
    }
  })

  test('APNG stays animated: acTL, fcTL and fdAT are kept, with every frame byte for byte', async () => {
    const animated = await apng()
    const file = withPngChunks(animated, [pngChunk('eXIf', gpsTiff()), tEXt('xmp:GPSLatitude', '51,30N')]) as Bytes
    const [gps, all] = await judgePhotos([{ name: 'APNG with eXIf and text', format: 'png', file }])
    for (const j of [gps!, all!]) {
      expect(pngChunks(j.stored).filter((c) => c.type !== 'eXIf')).toEqual(pngChunks(animated))
      expect(j.after['PNG:AnimationFrames']).toBe(2)
    }
  })

  test('a file with nothing to drop is kept byte for byte; on disk its chunk headers alone send it to the stripper or not', async () => {
    const plain = await base()
    const icc = new Uint8Array(await photo(24, 16).png().withIccProfile('p3').toBuffer())
    expect(typesOf(icc)).toContain('iCCP')
    const animated = await apng()
    for (const file of [plain, icc, animated]) {
      for (const mode of ['gps', 'all'] as const) {
        expect(strip(file, 'png', mode).out).toBeNull()
        const path = await scratch.file(file)
        expect(await stripMetadata(path, 'png', mode)).toBe(false)
        expect(new Uint8Array(await Bun.file(path).arrayBuffer())).toEqual(file)
      }
    }
    // The chunk headers alone decide: a trailer, a text chunk, an eXIf or a cut chunk send the file to the stripper.
    for (const file of [
      concat([plain, [0]]) as Bytes,
      withPngChunks(plain, [tEXt('Comment', 'x')]),
      withPngChunks(plain, [pngChunk('eXIf', gpsTiff())]),
      concat([plain.subarray(0, plain.length - 12), tEXt('Comment', 'hello').subarray(0, 12)]),
    ]) {
      const path = await scratch.file(file)
      expect(await stripMetadata(path, 'png', 'gps')).toBe(true)
      expect(new Uint8Array(await Bun.file(path).arrayBuffer()) as Uint8Array).toEqual(strip(file, 'png', 'gps').out!)
    }
  })

  test("issue 17's hostile PNGs are dropped unread: a zTXt XMP bomb, a GPS directory of 10,000 entries over 6 MB", async () => {
    for (const file of [await xmpBombPng(16 << 20), await gpsEntriesPng()]) {
      for (const mode of ['gps', 'all'] as const) {
        const { out, cost } = strip(file, 'png', mode)
        expect(typesOf(out!)).toEqual(typesOf(await tinyPng()))
        expect(cost).toBeLessThan(2 * file.length + 1024) // nothing inflated, no directory entry read
      }
    }
  })

  test('a picture chunk cut off is refused; a metadata chunk cut off is dropped', async () => {
    const file = await base()
    const idat = Buffer.from(file).indexOf('IDAT') - 4
    expect(refusal(file.subarray(0, idat + 14), 'png')).toBe(
      `${LOCATION_UNSAFE} (a PNG IDAT chunk cut off by the end of the file)`,
    )
    const cut = concat([file.subarray(0, file.length - 12), pngChunk('eXIf', gpsTiff()).subarray(0, 30)])
    expect(strip(cut, 'png', 'gps').out).toEqual(file.subarray(0, file.length - 12))
  })
})
