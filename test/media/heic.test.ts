import { afterAll, describe, expect, test } from 'bun:test'
import sharp from 'sharp'
import { decodeHeic } from '../../src/media/heic'
import { createMediaProcessor, MediaError } from '../../src/media/processor'
import { heifEnc, secondPrimary, turnedHeic } from './heic-files'
import { gradient, scratchDir } from './helpers'

sharp.cache(false)

const MAX = { pixels: 100_000_000, bytes: 512 * 2 ** 20 }
const scratch = await scratchDir()
afterAll(() => scratch.cleanup())

/** 64x48 grey with a red square in its top-left corner, so a turn shows where the corner went. */
const marked = () =>
  sharp({ create: { width: 64, height: 48, channels: 3, background: '#808080' } }).composite([
    { input: { create: { width: 16, height: 16, channels: 3, background: '#ff0000' } }, left: 0, top: 0 },
  ])

const isRed = (p: Uint8Array | Buffer) => p[0]! > 200 && p[1]! < 70 && p[2]! < 70

describe('decodeHeic', () => {
  test('decodes the picture heif-enc made, to RGBA of its size', async () => {
    const img = await decodeHeic(await heifEnc(marked()), { width: 64, height: 48 }, MAX.pixels, MAX.bytes)
    expect([img.width, img.height]).toEqual([64, 48])
    expect(img.data.length).toBe(64 * 48 * 4)
    expect(isRed(img.data.subarray(0, 4))).toBe(true)
  })

  test('applies the rotation of its irot property: the top-left corner ends at the bottom left', async () => {
    const img = await decodeHeic(turnedHeic(await heifEnc(marked())), { width: 48, height: 64 }, MAX.pixels, MAX.bytes)
    expect([img.width, img.height]).toEqual([48, 64])
    const bottomLeft = (63 * 48 + 2) * 4
    expect(isRed(img.data.subarray(bottomLeft, bottomLeft + 4))).toBe(true)
    expect(isRed(img.data.subarray(0, 4))).toBe(false)
  })

  test('refuses from the parsed header, before decoding: over the pixel limit, or over its memory', async () => {
    const heic = await heifEnc(marked())
    const size = { width: 64, height: 48 }
    await expect(decodeHeic(heic, size, 64 * 48 - 1, MAX.bytes)).rejects.toThrow('Image exceeds 0 megapixels')
    // The RGBA buffer, held by the decoder and copied out of it.
    await expect(decodeHeic(heic, size, MAX.pixels, 64 * 48 * 8 - 1)).rejects.toThrow(
      'Image needs too much memory to decode',
    )
    expect((await decodeHeic(heic, size, 64 * 48, 64 * 48 * 8)).width).toBe(64)
  })

  test('a cut file, or bytes that are no HEIF, are a MediaError', async () => {
    const heic = await heifEnc(gradient(64, 48))
    for (const bad of [heic.subarray(0, heic.length - 60), heic.subarray(0, 200), new Uint8Array(100)]) {
      const error = await decodeHeic(bad, { width: 64, height: 48 }, MAX.pixels, MAX.bytes).catch((e) => e)
      expect(error).toBeInstanceOf(MediaError)
      expect(error.message).toBe('Image could not be decoded')
    }
  })
})

test("the decoder's own failure messages stay out of the output (the uploader gets the 400)", async () => {
  const heic = await heifEnc(gradient(64, 48))
  const printed: unknown[] = []
  const log = console.log
  console.log = (...args: unknown[]) => printed.push(args)
  try {
    for (const bad of [heic.subarray(0, heic.length - 60), heic.subarray(0, 200)])
      await expect(decodeHeic(bad, { width: 64, height: 48 }, MAX.pixels, MAX.bytes)).rejects.toThrow(
        'could not be decoded',
      )
  } finally {
    console.log = log
  }
  expect(printed).toEqual([])
})

describe('decodeHeic: the primary picture', () => {
  const grey = (w: number, h: number) => sharp({ create: { width: w, height: h, channels: 3, background: '#808080' } })

  test('is the one the file names, also when it is not listed first', async () => {
    const two = await heifEnc([grey(64, 48), grey(32, 40)])
    expect((await decodeHeic(two, { width: 64, height: 48 }, MAX.pixels, MAX.bytes)).height).toBe(48)
    const img = await decodeHeic(secondPrimary(two), { width: 32, height: 40 }, MAX.pixels, MAX.bytes)
    expect([img.width, img.height, img.data.length]).toEqual([32, 40, 32 * 40 * 4])
  })

  test('a file without a picture of the probed size is refused', async () => {
    const heic = await heifEnc(grey(64, 48))
    await expect(decodeHeic(heic, { width: 48, height: 64 }, MAX.pixels, MAX.bytes)).rejects.toThrow(
      'could not be decoded',
    )
  })
})

describe('the media processor on HEIC', () => {
  const processor = createMediaProcessor({ maxPixels: MAX.pixels, maxDecodeBytes: MAX.bytes })

  test('inspect: format heic and the upright size from the header; thumbnail and classifier input from the pixels', async () => {
    const path = await scratch.file(turnedHeic(await heifEnc(marked())))
    const info = await processor.inspect(path)
    expect(info).toEqual({ format: 'heic', width: 48, height: 64, animated: false, frames: 1, filterPasses: 0 })
    const thumb = scratch.path('thumb.webp')
    expect(await processor.thumbnail(path, info, thumb)).toEqual({ width: 48, height: 64 })
    const { data, info: out } = await sharp(thumb).raw().toBuffer({ resolveWithObject: true })
    expect((await sharp(thumb).metadata()).format).toBe('webp')
    const bottomLeft = (63 * out.width + 2) * out.channels
    expect(isRed(data.subarray(bottomLeft, bottomLeft + 3))).toBe(true)
    expect((await processor.classifierInput(path, info)).length).toBe(224 * 224 * 3)
  })

  test('open: the decoded pipeline the thumbnail and the variants start from', async () => {
    const path = await scratch.file(await heifEnc(gradient(640, 480)))
    const info = await processor.inspect(path)
    const png = await (await processor.open(path, info, false)).resize(320).png().toBuffer()
    expect(await sharp(png).metadata()).toMatchObject({ width: 320, height: 240 })
  })

  test('a file whose primary picture is its second: the size and the thumbnail are of that picture', async () => {
    const path = await scratch.file(secondPrimary(await heifEnc([gradient(64, 48), gradient(32, 40)])))
    const info = await processor.inspect(path)
    expect([info.width, info.height]).toEqual([32, 40])
    expect(await processor.thumbnail(path, info, scratch.path('second.webp'))).toEqual({ width: 32, height: 40 })
  })

  test('over the pixel limit it is refused by inspect, from the header', async () => {
    const small = createMediaProcessor({ maxPixels: 10_000, maxDecodeBytes: MAX.bytes })
    const path = await scratch.file(await heifEnc(gradient(640, 480)))
    await expect(small.inspect(path)).rejects.toThrow('Image exceeds 0.01 megapixels')
  })
})
