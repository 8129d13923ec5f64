import { afterAll, beforeAll, describe, expect, test } from 'bun:test'
import { existsSync } from 'node:fs'
import sharp from 'sharp'
import { FORMATS, type ImageFormat } from '../../src/media/formats'
import { createMediaProcessor, MediaError } from '../../src/media/processor'
import { buildIco, encodeBmp, gradient, noise, pngHeaderOnly, type Rgba, scratchDir } from './helpers'

const media = createMediaProcessor({ maxPixels: 100_000_000 })
let scratch: Awaited<ReturnType<typeof scratchDir>>

beforeAll(async () => {
  scratch = await scratchDir()
})
afterAll(() => scratch.cleanup())

/** Decodes a written thumbnail: it must be a WebP, and its size is what the processor reported. */
async function readThumb(path: string) {
  const meta = await sharp(path, { animated: true }).metadata()
  expect(meta.format).toBe('webp')
  return { width: meta.width, height: meta.pageHeight ?? meta.height, pages: meta.pages ?? 1 }
}

/** An animated GIF of `frames` frames, each a different solid colour. */
async function animatedGif(width: number, height: number, frames: number) {
  const strip = Buffer.alloc(width * height * frames * 3)
  for (let f = 0; f < frames; f++) strip.fill(f * 60, f * width * height * 3, (f + 1) * width * height * 3)
  return sharp(strip, { raw: { width, height: height * frames, channels: 3, pageHeight: height } })
    .gif({ delay: Array(frames).fill(100), loop: 0 })
    .toBuffer()
}

const rgbaPixels = (width: number, height: number): Rgba[] =>
  Array.from({ length: width * height }, (_, i) => [(i * 37) % 256, (i * 11) % 256, 200, 255])

describe('inspect and thumbnail for every format', () => {
  const cases: [ImageFormat, () => Promise<Uint8Array | string>, number, number][] = [
    ['jpeg', () => gradient(640, 480).jpeg().toBuffer(), 640, 480],
    ['png', () => gradient(300, 200, 4).png().toBuffer(), 300, 200],
    ['gif', () => gradient(120, 90).gif().toBuffer(), 120, 90],
    ['webp', () => gradient(800, 600).webp().toBuffer(), 800, 600],
    ['tiff', () => gradient(64, 48).tiff().toBuffer(), 64, 48],
    ['avif', () => gradient(96, 64).avif().toBuffer(), 96, 64],
    [
      'svg',
      async () =>
        '<svg xmlns="http://www.w3.org/2000/svg" width="1000" height="400"><rect width="1000" height="400" fill="red"/></svg>',
      1000,
      400,
    ],
    ['bmp', async () => encodeBmp({ width: 40, height: 30, pixels: rgbaPixels(40, 30), bpp: 24 }), 40, 30],
    [
      'ico',
      async () =>
        buildIco([
          {
            data: encodeBmp({ width: 32, height: 32, pixels: rgbaPixels(32, 32), bpp: 32, icon: true }),
            width: 32,
            height: 32,
            bpp: 32,
          },
        ]),
      32,
      32,
    ],
  ]
  for (const [format, make, width, height] of cases) {
    test(`${format} (${FORMATS[format].mime}, .${FORMATS[format].ext})`, async () => {
      const path = await scratch.file(await make(), `${format}.upload`)
      const info = await media.inspect(path)
      expect(info).toEqual({ format, width, height, animated: false, frames: 1, filterPasses: 0 })
      const scale = Math.min(1, 500 / width, 500 / height)
      const expected = { width: Math.round(width * scale), height: Math.round(height * scale) }
      const dest = scratch.path(`${format}.thumb.webp`)
      expect(await media.thumbnail(path, info, dest)).toEqual(expected)
      const thumb = await readThumb(dest)
      expect({ width: thumb.width, height: thumb.height }).toEqual(expected)
      const pixels = await media.classifierInput(path, info)
      expect(pixels).toBeInstanceOf(Uint8Array)
      expect(pixels.length).toBe(224 * 224 * 3)
    })
  }
})

describe('inspect', () => {
  test('a text file named .png is not an image', async () => {
    const path = await scratch.file('hello, this is not a picture\n', 'fake.png')
    await expect(media.inspect(path)).rejects.toThrow(new MediaError('File is not a supported image'))
  })

  test('an empty file is not an image', async () => {
    const path = await scratch.file(new Uint8Array(), 'empty.jpg')
    await expect(media.inspect(path)).rejects.toThrow(new MediaError('File is not a supported image'))
  })

  test('a decompression bomb is refused from its header, before any pixel is decoded', async () => {
    // A header declaring 20000x20000 over an empty pixel stream: decoding it would fail ("could not be decoded"), so
    // only a refusal made from the header alone answers with the size.
    const path = await scratch.file(pngHeaderOnly(20000, 20000))
    await expect(media.inspect(path)).rejects.toThrow(new MediaError('Image exceeds 100 megapixels'))
  })

  test('an image of exactly the limit passes, one pixel more does not', async () => {
    const small = createMediaProcessor({ maxPixels: 100 * 100 })
    expect((await small.inspect(await scratch.file(pngHeaderOnly(100, 100)))).width).toBe(100)
    await expect(small.inspect(await scratch.file(pngHeaderOnly(101, 100)))).rejects.toThrow(MediaError)
  })

  test('BMP, ICO and SVG sizes are checked against the limit too', async () => {
    const bmp = Buffer.from(encodeBmp({ width: 1, height: 1, pixels: [[0, 0, 0, 255]], bpp: 24 }))
    bmp.writeInt32LE(30_000, 18)
    bmp.writeInt32LE(30_000, 22)
    await expect(media.inspect(await scratch.file(bmp))).rejects.toThrow(new MediaError('Image exceeds 100 megapixels'))
    const png = await sharp({ create: { width: 20, height: 10, channels: 4, background: 'red' } })
      .png()
      .toBuffer()
    const small = createMediaProcessor({ maxPixels: 100 })
    await expect(
      small.inspect(await scratch.file(buildIco([{ data: png, width: 20, height: 10, bpp: 32 }]))),
    ).rejects.toThrow(MediaError)
    const svg = '<svg xmlns="http://www.w3.org/2000/svg" width="20000" height="20000"/>'
    await expect(media.inspect(await scratch.file(svg))).rejects.toThrow(new MediaError('Image exceeds 100 megapixels'))
  })

  test('BMP V4 and V5 headers (14 + 108 and 14 + 124 bytes) are probed and decoded', async () => {
    for (const header of [108, 124] as const) {
      const path = await scratch.file(encodeBmp({ width: 40, height: 30, pixels: rgbaPixels(40, 30), bpp: 24, header }))
      const info = await media.inspect(path)
      expect([header, info]).toEqual([
        header,
        { format: 'bmp', width: 40, height: 30, animated: false, frames: 1, filterPasses: 0 },
      ])
      expect(await media.thumbnail(path, info, scratch.path(`v${header}.webp`))).toEqual({ width: 40, height: 30 })
    }
  })

  test('maxDecodeBytes bounds the BMP and ICO pixel buffers', async () => {
    const bounded = createMediaProcessor({ maxPixels: 100_000_000, maxDecodeBytes: 40 * 30 * 4 - 1 })
    const bmp = await scratch.file(encodeBmp({ width: 40, height: 30, pixels: rgbaPixels(40, 30), bpp: 24 }))
    const info = await bounded.inspect(bmp)
    await expect(bounded.thumbnail(bmp, info, scratch.path('bounded.webp'))).rejects.toThrow(
      new MediaError('Image needs too much memory to decode'),
    )
    const ico = await scratch.file(
      buildIco([
        {
          data: encodeBmp({ width: 40, height: 30, pixels: rgbaPixels(40, 30), bpp: 24, icon: true }),
          width: 40,
          height: 30,
          bpp: 24,
        },
      ]),
    )
    await expect(bounded.classifierInput(ico, await bounded.inspect(ico))).rejects.toThrow(
      new MediaError('Image needs too much memory to decode'),
    )
  })

  test('SVG size comes from width/height, else the viewBox', async () => {
    const svg = (attrs: string) =>
      scratch.file(`<?xml version="1.0"?>\n<svg xmlns="http://www.w3.org/2000/svg" ${attrs}/>`)
    expect(await media.inspect(await svg('width="120" height="80" viewBox="0 0 10 10"'))).toMatchObject({
      width: 120,
      height: 80,
    })
    expect(await media.inspect(await svg('viewBox="0 0 300 150"'))).toMatchObject({ width: 300, height: 150 })
  })

  test('a JPEG turned by EXIF orientation reports its upright size', async () => {
    const path = await scratch.file(await gradient(64, 32).jpeg().withMetadata({ orientation: 6 }).toBuffer())
    const info = await media.inspect(path)
    expect(info).toMatchObject({ width: 32, height: 64 })
    expect(await media.thumbnail(path, info, scratch.path('rotated.webp'))).toEqual({ width: 32, height: 64 })
  })

  test('a PNG with a broken header is a MediaError', async () => {
    const png = Buffer.from(pngHeaderOnly(10, 10))
    png[16] = 0xff // IHDR data no longer matches its CRC
    await expect(media.inspect(await scratch.file(png))).rejects.toThrow(MediaError)
  })
})

describe('animation', () => {
  test('an animated GIF reports its canvas and gets an animated thumbnail', async () => {
    const path = await scratch.file(await animatedGif(1000, 600, 3))
    const info = await media.inspect(path)
    expect(info).toEqual({ format: 'gif', width: 1000, height: 600, animated: true, frames: 3, filterPasses: 0 })
    const dest = scratch.path('anim.webp')
    expect(await media.thumbnail(path, info, dest)).toEqual({ width: 500, height: 300 })
    expect(await readThumb(dest)).toEqual({ width: 500, height: 300, pages: 3 })
  })

  test('an animated WebP is animated too; a one-frame GIF is not', async () => {
    const webp = await sharp(await animatedGif(40, 30, 2), { animated: true })
      .webp()
      .toBuffer()
    expect(await media.inspect(await scratch.file(webp))).toEqual({
      format: 'webp',
      width: 40,
      height: 30,
      animated: true,
      frames: 2,
      filterPasses: 0,
    })
    expect((await media.inspect(await scratch.file(await animatedGif(40, 30, 1)))).animated).toBe(false)
  })

  test('the classifier sees the first frame only', async () => {
    const path = await scratch.file(await animatedGif(50, 50, 3))
    const pixels = await media.classifierInput(path, await media.inspect(path))
    expect(pixels.length).toBe(150528)
    expect(Math.max(...pixels)).toBe(0) // frame 0 is black, the others are not
  })

  test('an animation with too many frames in total is refused', async () => {
    const small = createMediaProcessor({ maxPixels: 100 * 100 })
    const path = await scratch.file(await animatedGif(100, 100, 11))
    await expect(small.inspect(path)).rejects.toThrow(new MediaError('Animation has too many frames'))
  })
})

describe('thumbnail', () => {
  test('fits within 500x500 and never enlarges', async () => {
    for (const [w, h, tw, th] of [
      [2000, 1000, 500, 250],
      [1000, 2000, 250, 500],
      [100, 50, 100, 50],
      [500, 500, 500, 500],
    ] as const) {
      const path = await scratch.file(await gradient(w, h).png().toBuffer())
      const dest = scratch.path(`fit-${w}x${h}.webp`)
      expect(await media.thumbnail(path, await media.inspect(path), dest)).toEqual({ width: tw, height: th })
      expect(await readThumb(dest)).toEqual({ width: tw, height: th, pages: 1 })
    }
  })

  test('a truncated PNG passes inspect (header intact) but fails to decode', async () => {
    const png = await noise(600, 400).png().toBuffer()
    const path = await scratch.file(png.subarray(0, png.length >> 1))
    const info = await media.inspect(path)
    await expect(media.thumbnail(path, info, scratch.path('trunc.webp'))).rejects.toThrow(
      new MediaError('Image could not be decoded'),
    )
    expect(await Bun.file(scratch.path('trunc.webp')).exists()).toBe(false)
  })

  test('a truncated JPEG fails to decode', async () => {
    const jpeg = await gradient(800, 600).jpeg().toBuffer()
    const path = await scratch.file(jpeg.subarray(0, jpeg.length >> 1))
    await expect(media.thumbnail(path, await media.inspect(path), scratch.path('trunc-jpeg.webp'))).rejects.toThrow(
      MediaError,
    )
  })

  test('a corrupt BMP fails to decode', async () => {
    const bmp = encodeBmp({ width: 40, height: 30, pixels: rgbaPixels(40, 30), bpp: 24 })
    const path = await scratch.file(bmp.subarray(0, 200))
    await expect(media.thumbnail(path, await media.inspect(path), scratch.path('bad.webp'))).rejects.toThrow(MediaError)
  })

  test('thumbnailAndClassifierInput gives both from one decode, the input early: before the thumbnail is written', async () => {
    const path = await scratch.file(await gradient(1920, 1080).png().toBuffer())
    const info = await media.inspect(path)
    const dest = scratch.path('both.webp')
    let early: { input: Uint8Array; thumbnailWritten: boolean } | undefined
    const out = await media.thumbnailAndClassifierInput(path, info, dest, (input) => {
      early = { input, thumbnailWritten: existsSync(dest) }
    })
    expect(early?.thumbnailWritten).toBe(false)
    expect({ width: out.width, height: out.height }).toEqual({ width: 500, height: 281 })
    expect(early?.input.length).toBe(150528)
    expect(out.phash).toBe(await media.perceptualHash(path, info))
    expect(await readThumb(dest)).toEqual({ width: 500, height: 281, pages: 1 })
  })

  test('from the one decode, 16-bit, CMYK and transparent images give the same RGB as classifierInput, and the thumbnail keeps alpha', async () => {
    const images = {
      deep: await sharp({ create: { width: 30, height: 20, channels: 4, background: '#ff800080' } })
        .toColourspace('rgb16')
        .png()
        .toBuffer(),
      cmyk: await sharp({ create: { width: 30, height: 20, channels: 3, background: '#ff8000' } })
        .toColourspace('cmyk')
        .jpeg()
        .toBuffer(),
      clear: await sharp({ create: { width: 10, height: 10, channels: 4, background: '#00000000' } })
        .png()
        .toBuffer(),
    }
    for (const [name, bytes] of Object.entries(images)) {
      const path = await scratch.file(bytes)
      const info = await media.inspect(path)
      const dest = scratch.path(`one-decode-${name}.webp`)
      let input: Uint8Array | undefined
      await media.thumbnailAndClassifierInput(path, info, dest, (rgb) => {
        input = rgb
      })
      const alone = await media.classifierInput(path, info)
      expect(input?.length).toBe(150528)
      for (let i = 0; i < 3; i++) expect(Math.abs(input![i]! - alone[i]!)).toBeLessThanOrEqual(2)
      const thumb = await sharp(dest).raw().toBuffer({ resolveWithObject: true })
      expect(thumb.info.channels).toBe(name === 'cmyk' ? 3 : 4)
    }
  })
})

describe('classifier input', () => {
  test('greyscale and transparent images still give 224x224 RGB', async () => {
    const grey = await scratch.file(await gradient(300, 100).greyscale().jpeg().toBuffer())
    expect((await media.classifierInput(grey, await media.inspect(grey))).length).toBe(150528)
    const clear = await scratch.file(
      await sharp({ create: { width: 10, height: 10, channels: 4, background: '#00000000' } })
        .png()
        .toBuffer(),
    )
    const pixels = await media.classifierInput(clear, await media.inspect(clear))
    expect(pixels.length).toBe(150528)
    expect(Math.min(...pixels)).toBe(255) // transparency is shown on white
  })

  test('16-bit PNG and CMYK JPEG come out as 8-bit RGB', async () => {
    const deep = await scratch.file(
      await sharp({ create: { width: 30, height: 20, channels: 4, background: '#ff800080' } })
        .toColourspace('rgb16')
        .png()
        .toBuffer(),
    )
    expect((await media.classifierInput(deep, await media.inspect(deep))).subarray(0, 3)).toEqual(
      new Uint8Array([255, 191, 127]),
    )
    const cmyk = await scratch.file(
      await sharp({ create: { width: 30, height: 20, channels: 3, background: '#ff8000' } })
        .toColourspace('cmyk')
        .jpeg()
        .toBuffer(),
    )
    const pixels = await media.classifierInput(cmyk, await media.inspect(cmyk))
    expect(pixels.length).toBe(150528)
    expect(pixels[0]).toBeGreaterThan(200)
    expect(pixels[2]).toBeLessThan(50)
  })

  test('ICO entries stored as PNG and as BMP both decode', async () => {
    const png = await sharp({ create: { width: 64, height: 64, channels: 4, background: '#00ff00' } })
      .png()
      .toBuffer()
    const dib = encodeBmp({ width: 16, height: 16, pixels: Array(256).fill([255, 0, 0, 255]), bpp: 24, icon: true })
    const withPng = await scratch.file(
      buildIco([
        { data: dib, width: 16, height: 16, bpp: 24 },
        { data: png, width: 64, height: 64, bpp: 32 },
      ]),
    )
    const withBmp = await scratch.file(buildIco([{ data: dib, width: 16, height: 16, bpp: 24 }]))
    const pngInfo = await media.inspect(withPng)
    expect(pngInfo).toEqual({ format: 'ico', width: 64, height: 64, animated: false, frames: 1, filterPasses: 0 })
    expect((await media.classifierInput(withPng, pngInfo)).subarray(0, 3)).toEqual(new Uint8Array([0, 255, 0]))
    const bmpInfo = await media.inspect(withBmp)
    expect(bmpInfo).toEqual({ format: 'ico', width: 16, height: 16, animated: false, frames: 1, filterPasses: 0 })
    expect((await media.classifierInput(withBmp, bmpInfo)).subarray(0, 3)).toEqual(new Uint8Array([255, 0, 0]))
  })
})

describe('SVG safety', () => {
  let hits = 0
  let server: ReturnType<typeof Bun.serve>
  beforeAll(() => {
    server = Bun.serve({
      port: 0,
      fetch: async () => {
        hits++
        return new Response(
          await sharp({ create: { width: 4, height: 4, channels: 3, background: 'red' } })
            .png()
            .toBuffer(),
          {
            headers: { 'content-type': 'image/png' },
          },
        )
      },
    })
  })
  afterAll(() => server.stop(true))

  test('external references (file, relative, http, use, CSS) are never loaded', async () => {
    const red = await scratch.file(
      await sharp({ create: { width: 20, height: 20, channels: 3, background: 'red' } })
        .png()
        .toBuffer(),
      'red.png',
    )
    await scratch.file(
      '<svg xmlns="http://www.w3.org/2000/svg"><rect id="r" width="20" height="20" fill="red"/></svg>',
      'red.svg',
    )
    const http = `http://127.0.0.1:${server.port}/x.png`
    const bodies = [
      `<image href="file://${red}" width="20" height="20"/>`,
      `<image xlink:href="${red}" width="20" height="20"/>`,
      '<image href="red.png" width="20" height="20"/>',
      `<image href="${http}" width="20" height="20"/>`,
      `<use href="file://${scratch.path('red.svg')}#r"/>`,
      '<use href="red.svg#r"/>',
      `<rect width="20" height="20" style="fill:url(${http})"/><style>@import url("${http}");</style>`,
    ]
    for (const body of bodies) {
      const path = await scratch.file(
        `<svg xmlns="http://www.w3.org/2000/svg" xmlns:xlink="http://www.w3.org/1999/xlink" width="20" height="20">${body}</svg>`,
      )
      const info = await media.inspect(path)
      const dest = scratch.path('svg-safety.webp')
      await media.thumbnail(path, info, dest)
      const { data } = await sharp(dest).ensureAlpha().raw().toBuffer({ resolveWithObject: true })
      // Had the red image been loaded, the thumbnail would be red; it must be empty (transparent or black).
      for (let i = 0; i < data.length; i += 4) expect(data[i]! > 128 && data[i + 3]! > 128).toBe(false)
      await media.classifierInput(path, info)
    }
    expect(hits).toBe(0)
  })

  test('an SVG entity bomb is refused', async () => {
    const entities = [
      '<!ENTITY a "aaaaaaaaaa">',
      ...'bcdefgh'.split('').map((e, i) => `<!ENTITY ${e} "${`&${'abcdefgh'[i]};`.repeat(10)}">`),
    ]
    const path = await scratch.file(
      `<?xml version="1.0"?><!DOCTYPE svg [${entities.join('')}]><svg xmlns="http://www.w3.org/2000/svg" width="20" height="20"><text>&h;</text></svg>`,
    )
    await expect(media.inspect(path)).rejects.toThrow(MediaError)
  })
})
