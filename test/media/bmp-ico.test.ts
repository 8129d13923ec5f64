import { describe, expect, test } from 'bun:test'
import sharp from 'sharp'
import { decodeBmp, readBmpSize } from '../../src/media/bmp'
import { MediaError } from '../../src/media/errors'
import { decodeIco } from '../../src/media/ico'
import { buildIco, encodeBmp, noise, type Rgba } from './helpers'

const MAX = 100_000_000
const MAX_BYTES = 512 * 1024 * 1024
const R: Rgba = [255, 0, 0, 255]
const G: Rgba = [0, 255, 0, 255]
const B: Rgba = [0, 0, 255, 255]
const W: Rgba = [255, 255, 255, 255]
const K: Rgba = [0, 0, 0, 255]
const C: Rgba = [0, 255, 255, 255]

// 5x3: an odd width exercises row padding; every row differs so a flipped image shows.
const WIDTH = 5
const HEIGHT = 3
const COLOURS: Rgba[] = [R, G, B, W, K, C, R, R, G, G, B, B, W, K, C]
const TWO_COLOURS: Rgba[] = [K, W, W, K, K, W, K, K, W, W, W, W, W, K, K]

const rgba = (pixels: Rgba[]) => Uint8Array.from(pixels.flat())

describe('BMP decoder', () => {
  const cases: [string, Parameters<typeof encodeBmp>[0]][] = [
    ['24-bit bottom-up', { width: WIDTH, height: HEIGHT, pixels: COLOURS, bpp: 24 }],
    ['24-bit top-down', { width: WIDTH, height: HEIGHT, pixels: COLOURS, bpp: 24, topDown: true }],
    ['24-bit with a core (OS/2) header', { width: WIDTH, height: HEIGHT, pixels: COLOURS, bpp: 24, header: 12 }],
    ['32-bit BI_RGB (fourth byte is not alpha)', { width: WIDTH, height: HEIGHT, pixels: COLOURS, bpp: 32 }],
    ['16-bit 5-5-5 BI_RGB', { width: WIDTH, height: HEIGHT, pixels: COLOURS, bpp: 16 }],
    [
      '16-bit 5-6-5 bitfields after an info header',
      { width: WIDTH, height: HEIGHT, pixels: COLOURS, bpp: 16, masks: [0xf800, 0x07e0, 0x001f] },
    ],
    [
      '32-bit bitfields in a V4 header',
      { width: WIDTH, height: HEIGHT, pixels: COLOURS, bpp: 32, header: 108, masks: [0xff0000, 0xff00, 0xff, 0] },
    ],
    ['8-bit palette', { width: WIDTH, height: HEIGHT, pixels: COLOURS, bpp: 8 }],
    [
      '8-bit palette, V5 header, top-down',
      { width: WIDTH, height: HEIGHT, pixels: COLOURS, bpp: 8, header: 124, topDown: true },
    ],
    ['4-bit palette', { width: WIDTH, height: HEIGHT, pixels: COLOURS, bpp: 4 }],
    ['4-bit palette with a core header', { width: WIDTH, height: HEIGHT, pixels: COLOURS, bpp: 4, header: 12 }],
    ['1-bit palette', { width: WIDTH, height: HEIGHT, pixels: TWO_COLOURS, bpp: 1 }],
  ]
  for (const [name, spec] of cases) {
    test(name, () => {
      const file = encodeBmp(spec)
      expect(readBmpSize(file)).toEqual({ width: WIDTH, height: HEIGHT })
      const img = decodeBmp(file, MAX, MAX_BYTES)
      expect(img.width).toBe(WIDTH)
      expect(img.height).toBe(HEIGHT)
      expect(img.data).toEqual(rgba(spec.pixels))
    })
  }

  test('32-bit with an alpha mask in a V5 header keeps alpha', () => {
    const pixels: Rgba[] = COLOURS.map(([r, g, b], i) => [r, g, b, i * 17])
    const file = encodeBmp({
      width: WIDTH,
      height: HEIGHT,
      pixels,
      bpp: 32,
      header: 124,
      masks: [0xff0000, 0xff00, 0xff, 0xff000000],
    })
    expect(decodeBmp(file, MAX, MAX_BYTES).data).toEqual(rgba(pixels))
  })

  test('a wide image decodes like sharp sees the same pixels', async () => {
    const raw = await noise(37, 11).raw().toBuffer()
    const pixels: Rgba[] = []
    for (let i = 0; i < raw.length; i += 3) pixels.push([raw[i]!, raw[i + 1]!, raw[i + 2]!, 255])
    expect(decodeBmp(encodeBmp({ width: 37, height: 11, pixels, bpp: 24 }), MAX, MAX_BYTES).data).toEqual(rgba(pixels))
  })

  test('RLE compression is refused with a MediaError', () => {
    const file = encodeBmp({ width: WIDTH, height: HEIGHT, pixels: COLOURS, bpp: 8, compression: 1 })
    expect(() => decodeBmp(file, MAX, MAX_BYTES)).toThrow(new MediaError('Compressed BMP images are not supported'))
  })

  test('truncated pixel data is a MediaError', () => {
    const file = encodeBmp({ width: WIDTH, height: HEIGHT, pixels: COLOURS, bpp: 24 })
    expect(() => decodeBmp(file.subarray(0, file.length - 5), MAX, MAX_BYTES)).toThrow(
      new MediaError('Image could not be decoded'),
    )
  })

  test('dimensions over the limit are refused before any allocation', () => {
    const header = Buffer.from(encodeBmp({ width: 1, height: 1, pixels: [K], bpp: 24 }))
    header.writeInt32LE(100_000, 18)
    header.writeInt32LE(100_000, 22)
    expect(readBmpSize(header)).toEqual({ width: 100_000, height: 100_000 })
    expect(() => decodeBmp(header, MAX, MAX_BYTES)).toThrow(new MediaError('Image exceeds 100 megapixels'))
  })

  test('a 1-bit 10000x10000 BMP (12.5 MB) is refused under a 256 MiB bound before its 400 MB buffer is allocated', () => {
    const width = 10_000
    const height = 10_000
    const header = Buffer.from(encodeBmp({ width: 8, height: 1, pixels: Array(8).fill(K), bpp: 1 }))
    const pixelOffset = header.readUInt32LE(10)
    header.writeInt32LE(width, 18)
    header.writeInt32LE(height, 22)
    // Every row is there (1250 bytes, padded to 1252): only the memory bound can refuse this file.
    const file = Buffer.concat([header.subarray(0, pixelOffset), Buffer.alloc(1252 * height)])
    expect(file.length).toBeGreaterThan(12_500_000)
    expect(width * height).toBeLessThanOrEqual(MAX)

    // Every large typed array made during the call is seen: the refusal must come before the pixel buffer.
    const RealUint8Array = globalThis.Uint8Array
    const large: number[] = []
    globalThis.Uint8Array = new Proxy(RealUint8Array, {
      construct(target, args, newTarget) {
        if (typeof args[0] === 'number' && args[0] >= 1 << 20) large.push(args[0])
        return Reflect.construct(target, args, newTarget)
      },
    })
    try {
      expect(() => decodeBmp(file, MAX, 256 * 1024 * 1024)).toThrow(
        new MediaError('Image needs too much memory to decode'),
      )
      expect(large).toEqual([])
      // The same bound holds for an icon's DIB.
      const dib = Buffer.from(encodeBmp({ width: 8, height: 1, pixels: Array(8).fill(K), bpp: 1, icon: true }))
      dib.writeInt32LE(width, 4)
      dib.writeInt32LE(height * 2, 8)
      const ico = buildIco([{ data: Buffer.concat([dib, Buffer.alloc(1252 * height)]), width: 0, height: 0, bpp: 1 }])
      expect(() => decodeIco(ico, MAX, 256 * 1024 * 1024)).toThrow(
        new MediaError('Image needs too much memory to decode'),
      )
      expect(large).toEqual([])
    } finally {
      globalThis.Uint8Array = RealUint8Array
    }
    // Under a bound that allows it, the proxy does see the buffer: the check above watches the right thing.
    expect(() =>
      decodeBmp(
        encodeBmp({ width: 1024, height: 300, pixels: Array(1024 * 300).fill(K), bpp: 1 }),
        MAX,
        1024 * 300 * 4,
      ),
    ).not.toThrow()
  })

  test('zero or negative width is a MediaError', () => {
    const header = Buffer.from(encodeBmp({ width: 1, height: 1, pixels: [K], bpp: 24 }))
    header.writeInt32LE(-4, 18)
    expect(() => readBmpSize(header)).toThrow(MediaError)
  })
})

describe('ICO decoder', () => {
  const translucent: Rgba[] = COLOURS.map(([r, g, b], i) => [r, g, b, i % 3 === 0 ? 0 : 255])

  test('a 32-bit DIB entry keeps its alpha', () => {
    const dib = encodeBmp({ width: WIDTH, height: HEIGHT, pixels: translucent, bpp: 32, icon: true })
    const img = decodeIco(buildIco([{ data: dib, width: WIDTH, height: HEIGHT, bpp: 32 }]), MAX, MAX_BYTES)
    expect(img).toEqual({ width: WIDTH, height: HEIGHT, data: rgba(translucent) })
  })

  test('an 8-bit DIB entry takes transparency from its AND mask', () => {
    const dib = encodeBmp({ width: WIDTH, height: HEIGHT, pixels: translucent, bpp: 8, icon: true })
    const img = decodeIco(buildIco([{ data: dib, width: WIDTH, height: HEIGHT, bpp: 8 }]), MAX, MAX_BYTES)
    expect(img).toEqual({ width: WIDTH, height: HEIGHT, data: rgba(translucent) })
  })

  test('a 32-bit entry with all-zero alpha falls back to the AND mask', () => {
    const dib = Buffer.from(encodeBmp({ width: WIDTH, height: HEIGHT, pixels: translucent, bpp: 32, icon: true }))
    for (let i = 40 + 3; i < 40 + WIDTH * HEIGHT * 4; i += 4) dib[i] = 0
    const img = decodeIco(buildIco([{ data: dib, width: WIDTH, height: HEIGHT, bpp: 32 }]), MAX, MAX_BYTES)
    expect(img).toEqual({ width: WIDTH, height: HEIGHT, data: rgba(translucent) })
  })

  test('the largest entry is chosen; a PNG entry is returned for sharp', async () => {
    const png = await sharp({ create: { width: 48, height: 48, channels: 4, background: '#ff000080' } })
      .png()
      .toBuffer()
    const small = encodeBmp({ width: WIDTH, height: HEIGHT, pixels: COLOURS, bpp: 24, icon: true })
    const img = decodeIco(
      buildIco([
        { data: small, width: WIDTH, height: HEIGHT, bpp: 24 },
        { data: png, width: 48, height: 48, bpp: 32 },
      ]),
      MAX,
      MAX_BYTES,
    )
    expect(img).toEqual({ png: new Uint8Array(png) })
  })

  test('an entry pointing past the end of the file is a MediaError', () => {
    const dib = encodeBmp({ width: WIDTH, height: HEIGHT, pixels: COLOURS, bpp: 24, icon: true })
    const file = buildIco([{ data: dib, width: WIDTH, height: HEIGHT, bpp: 24 }])
    expect(() => decodeIco(file.subarray(0, file.length - 10), MAX, MAX_BYTES)).toThrow(MediaError)
  })
})
