import { mkdtemp, rm } from 'node:fs/promises'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { crc32 } from 'node:zlib'
import sharp from 'sharp'

/** A scratch directory for one test file; `cleanup` in afterAll. */
export async function scratchDir() {
  const dir = await mkdtemp(join(tmpdir(), 'media-test-'))
  let n = 0
  return {
    dir,
    /** Writes bytes to a fresh file (the name's extension is deliberately meaningless to the code under test). */
    async file(bytes: Uint8Array | string, name = `f${n++}.bin`) {
      const path = join(dir, name)
      await Bun.write(path, bytes)
      return path
    },
    path: (name: string) => join(dir, name),
    cleanup: () => rm(dir, { recursive: true, force: true }),
  }
}

/** A deterministic colourful RGB(A) image, so resizing and encoding have real content to work on. */
export function gradient(width: number, height: number, channels: 3 | 4 = 3) {
  const data = Buffer.alloc(width * height * channels)
  for (let y = 0; y < height; y++) {
    for (let x = 0; x < width; x++) {
      const o = (y * width + x) * channels
      data[o] = (x * 255) / Math.max(1, width - 1)
      data[o + 1] = (y * 255) / Math.max(1, height - 1)
      data[o + 2] = (x * y) % 256
      if (channels === 4) data[o + 3] = 255
    }
  }
  return sharp(data, { raw: { width, height, channels } })
}

/** Random-looking RGB pixels, which compress badly: sizeable files, and any decoding error shows. */
export function noise(width: number, height: number) {
  return sharp({
    create: { width, height, channels: 3, background: '#000', noise: { type: 'gaussian', mean: 128, sigma: 50 } },
  })
}

export function pngChunk(type: string, data: Uint8Array): Uint8Array {
  const out = Buffer.alloc(12 + data.length)
  out.writeUInt32BE(data.length, 0)
  out.write(type, 4, 'latin1')
  out.set(data, 8)
  out.writeUInt32BE(crc32(out.subarray(4, 8 + data.length)), 8 + data.length)
  return out
}

/** A PNG whose header claims `width`x`height` but whose data is a few bytes: a decompression bomb's shape. */
export function pngHeaderOnly(width: number, height: number): Uint8Array {
  const ihdr = Buffer.alloc(13)
  ihdr.writeUInt32BE(width, 0)
  ihdr.writeUInt32BE(height, 4)
  ihdr.set([8, 2, 0, 0, 0], 8)
  return Buffer.concat([
    Buffer.from([0x89, 0x50, 0x4e, 0x47, 0x0d, 0x0a, 0x1a, 0x0a]),
    pngChunk('IHDR', ihdr),
    pngChunk('IDAT', new Uint8Array([0x78, 0x9c, 0x03, 0x00, 0x00, 0x00, 0x00, 0x01])),
    pngChunk('IEND', new Uint8Array()),
  ])
}

export type Rgba = [number, number, number, number]

export interface BmpSpec {
  width: number
  height: number
  /** Row-major, top row first. */
  pixels: Rgba[]
  bpp: 1 | 4 | 8 | 16 | 24 | 32
  header?: 12 | 40 | 56 | 108 | 124
  topDown?: boolean
  /** BI_BITFIELDS masks (r, g, b, a); a 40-byte header stores three of them after itself. */
  masks?: [number, number, number, number?]
  compression?: number
  /** An icon entry: no file header, doubled height, alpha in 32-bit pixels and an AND mask after the pixels. */
  icon?: boolean
}

/** Our own independent BMP writer, to feed the decoder every layout it claims to read. */
export function encodeBmp(spec: BmpSpec): Uint8Array {
  const { width, height, pixels, bpp } = spec
  const headerSize = spec.header ?? 40
  const masks = spec.masks
  const compression = spec.compression ?? (masks ? 3 : 0)
  const palette: Rgba[] = []
  if (bpp <= 8) for (const p of pixels) if (!palette.some((q) => q.every((v, i) => v === p[i]))) palette.push(p)
  const paletteEntry = headerSize === 12 ? 3 : 4
  const maskBytes = masks && headerSize === 40 ? 12 : 0
  const stride = Math.ceil((width * bpp) / 32) * 4
  const maskStride = Math.ceil(width / 32) * 4
  const fileHeader = spec.icon ? 0 : 14
  const pixelOffset = fileHeader + headerSize + maskBytes + palette.length * paletteEntry
  const size = pixelOffset + stride * height + (spec.icon ? maskStride * height : 0)
  const b = Buffer.alloc(size)
  if (!spec.icon) {
    b.write('BM', 0, 'latin1')
    b.writeUInt32LE(size, 2)
    b.writeUInt32LE(pixelOffset, 10)
  }
  const h = fileHeader
  const storedHeight = (spec.icon ? 2 : 1) * height * (spec.topDown ? -1 : 1)
  b.writeUInt32LE(headerSize, h)
  if (headerSize === 12) {
    b.writeUInt16LE(width, h + 4)
    b.writeInt16LE(storedHeight, h + 6)
    b.writeUInt16LE(1, h + 8)
    b.writeUInt16LE(bpp, h + 10)
  } else {
    b.writeInt32LE(width, h + 4)
    b.writeInt32LE(storedHeight, h + 8)
    b.writeUInt16LE(1, h + 12)
    b.writeUInt16LE(bpp, h + 14)
    b.writeUInt32LE(compression, h + 16)
    b.writeUInt32LE(palette.length, h + 32)
    masks?.forEach((m, i) => {
      if (m !== undefined && (i < 3 || headerSize >= 56)) b.writeUInt32LE(m, h + 40 + i * 4)
    })
  }
  let at = h + headerSize + maskBytes
  for (const [r, g, bl] of palette) {
    b.set(paletteEntry === 3 ? [bl, g, r] : [bl, g, r, 0], at)
    at += paletteEntry
  }
  const pack = (p: Rgba, m: readonly (number | undefined)[]) =>
    m.reduce<number>((px, mask, i) => {
      if (!mask) return px
      let shift = 0
      while (((mask >>> shift) & 1) === 0) shift++
      const max = mask >>> shift
      return (px | (Math.round((p[i]! * max) / 255) << shift)) >>> 0
    }, 0)
  for (let y = 0; y < height; y++) {
    const row = pixelOffset + (spec.topDown ? y : height - 1 - y) * stride
    for (let x = 0; x < width; x++) {
      const p = pixels[y * width + x]!
      if (bpp <= 8) {
        const index = palette.findIndex((q) => q.every((v, i) => v === p[i]))
        const bit = x * bpp
        b[row + (bit >> 3)]! |= index << (8 - bpp - (bit & 7))
      } else if (bpp === 16) {
        b.writeUInt16LE(pack(p, masks ?? [0x7c00, 0x03e0, 0x001f]), row + x * 2)
      } else if (bpp === 24 || !masks) {
        b.set([p[2], p[1], p[0]], row + x * (bpp / 8))
        if (bpp === 32) b[row + x * 4 + 3] = spec.icon ? p[3] : 0
      } else {
        b.writeUInt32LE(pack(p, masks), row + x * 4)
      }
    }
    if (spec.icon) {
      const maskRow = pixelOffset + stride * height + (height - 1 - y) * maskStride
      for (let x = 0; x < width; x++) if (pixels[y * width + x]![3] < 128) b[maskRow + (x >> 3)]! |= 0x80 >> (x & 7)
    }
  }
  return b
}

/** An .ico file holding the given entries (PNG bytes or icon DIBs), with their directory sizes. */
export function buildIco(entries: { data: Uint8Array; width: number; height: number; bpp: number }[]): Uint8Array {
  const header = Buffer.alloc(6 + entries.length * 16)
  header.writeUInt16LE(1, 2)
  header.writeUInt16LE(entries.length, 4)
  let offset = header.length
  entries.forEach((e, i) => {
    const d = 6 + i * 16
    header[d] = e.width >= 256 ? 0 : e.width
    header[d + 1] = e.height >= 256 ? 0 : e.height
    header.writeUInt16LE(1, d + 4)
    header.writeUInt16LE(e.bpp, d + 6)
    header.writeUInt32LE(e.data.length, d + 8)
    header.writeUInt32LE(offset, d + 12)
    offset += e.data.length
  })
  return Buffer.concat([header, ...entries.map((e) => e.data)])
}

/** The tags of IFD0 of a TIFF structure (an Exif block without its "Exif\0\0" prefix), with their first value. */
export function ifd0Tags(tiff: Uint8Array): Map<number, number> {
  const b = Buffer.from(tiff.buffer, tiff.byteOffset, tiff.length)
  const le = b.toString('latin1', 0, 2) === 'II'
  const u16 = (at: number) => (le ? b.readUInt16LE(at) : b.readUInt16BE(at))
  const u32 = (at: number) => (le ? b.readUInt32LE(at) : b.readUInt32BE(at))
  const ifd = u32(4)
  const tags = new Map<number, number>()
  for (let i = 0; i < u16(ifd); i++) {
    const e = ifd + 2 + i * 12
    tags.set(u16(e), u16(e + 2) === 3 ? u16(e + 8) : u32(e + 8))
  }
  return tags
}
