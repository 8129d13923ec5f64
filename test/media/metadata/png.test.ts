import { afterAll, beforeAll, describe, expect, test } from 'bun:test'
import sharp from 'sharp'
import { LOCATION_UNSAFE, stripMetadata } from '../../../src/media/exif'
import { pngChunk, scratchDir } from '../helpers'
import { concat, gpsEntriesPng, photo, tinyPng, withPngChunks, xmpBombPng } from '../hostile-files'
import { refusal, strip } from './containers'
import { craftedPngs } from './crafted'
import { apng, gpsTiff, judgePhotos, pngChunks, tEXt, toolCorpus } from './photos'

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

  test('a picture chunk cut off is refused, and so is a file without the signature; a metadata chunk cut off is dropped', async () => {
    const file = await base()
    expect(refusal(file.subarray(8), 'png')).toBe(`${LOCATION_UNSAFE} (not a PNG)`)
    const idat = Buffer.from(file).indexOf('IDAT') - 4
    expect(refusal(file.subarray(0, idat + 14), 'png')).toBe(
      `${LOCATION_UNSAFE} (a PNG IDAT chunk cut off by the end of the file)`,
    )
    const cut = concat([file.subarray(0, file.length - 12), pngChunk('eXIf', gpsTiff()).subarray(0, 30)])
    expect(strip(cut, 'png', 'gps').out).toEqual(file.subarray(0, file.length - 12))
  })
})
