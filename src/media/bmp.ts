import { ascii, i16le, i32le, u16le, u32le } from './bytes'
import { DIB_HEADER_SIZES } from './detect'
import { exceedsMessage, MediaError } from './errors'

/** Decoded pixels, 4 bytes (RGBA) per pixel, rows top to bottom. */
export interface RgbaImage {
  width: number
  height: number
  data: Uint8Array
}

const BI_RGB = 0
const BI_BITFIELDS = 3
const BI_ALPHABITFIELDS = 6

interface DibHeader {
  headerSize: number
  width: number
  /** Rows of the colour bitmap (for icons: half the stored height, which also counts the AND mask). */
  height: number
  topDown: boolean
  bpp: number
  compression: number
  colorsUsed: number
}

const undecodable = () => new MediaError('Image could not be decoded')

/** Bytes of a BMP file that hold both its headers: the file header and the largest DIB header (V5, 124 bytes). */
export const BMP_HEAD_BYTES = 14 + Math.max(...DIB_HEADER_SIZES)

/** Reads a DIB header at `at`. Icons store twice the height (colour rows, then the AND mask rows). */
export function readDibHeader(buf: Uint8Array, at: number, icon: boolean): DibHeader {
  if (at + 4 > buf.length) throw undecodable()
  const headerSize = u32le(buf, at)
  if (!DIB_HEADER_SIZES.has(headerSize) || at + headerSize > buf.length) throw undecodable()
  let width: number, rawHeight: number, bpp: number, compression: number, colorsUsed: number
  if (headerSize === 12) {
    width = u16le(buf, at + 4)
    rawHeight = i16le(buf, at + 6)
    bpp = u16le(buf, at + 10)
    compression = BI_RGB
    colorsUsed = 0
  } else {
    width = i32le(buf, at + 4)
    rawHeight = i32le(buf, at + 8)
    bpp = u16le(buf, at + 14)
    compression = u32le(buf, at + 16)
    colorsUsed = u32le(buf, at + 32)
    // OS/2 v2 headers reuse compression numbers for other schemes; only plain RGB means the same thing there.
    if (headerSize === 64 && compression !== BI_RGB) compression = -1
  }
  const topDown = rawHeight < 0
  let height = Math.abs(rawHeight)
  if (icon) height = Math.floor(height / 2)
  if (width <= 0 || height <= 0) throw undecodable()
  return { headerSize, width, height, topDown, bpp, compression, colorsUsed }
}

/** Width and height from a BMP file's headers, without touching pixel data. */
export function readBmpSize(head: Uint8Array): { width: number; height: number } {
  if (head.length < 14 || ascii(head, 0, 2) !== 'BM') throw undecodable()
  const { width, height } = readDibHeader(head, 14, false)
  return { width, height }
}

interface Channel {
  mask: number
  shift: number
  max: number
}

function channel(mask: number): Channel | null {
  if (mask === 0) return null
  let shift = 0
  while (((mask >>> shift) & 1) === 0) shift++
  return { mask, shift, max: mask >>> shift }
}

function extract(px: number, c: Channel): number {
  return Math.round(((((px & c.mask) >>> 0) >>> c.shift) * 255) / c.max)
}

/**
 * Decodes a DIB: the bitmap inside a BMP file (`pixelOffset` from the file header) or an icon entry (pixels right
 * after the palette, then a 1-bit AND mask of transparent pixels). Refuses more than `maxPixels`, or an RGBA buffer
 * larger than `maxBytes`, before allocating anything: a few bytes of 1-bit BMP can stand for hundreds of MB of pixels.
 */
export function decodeDib(
  buf: Uint8Array,
  at: number,
  pixelOffset: number | null,
  icon: boolean,
  maxPixels: number,
  maxBytes: number,
): RgbaImage {
  const h = readDibHeader(buf, at, icon)
  const { width, height, bpp } = h
  if (width * height > maxPixels) throw new MediaError(exceedsMessage(maxPixels))
  if (width * height * 4 > maxBytes) throw new MediaError('Image needs too much memory to decode')
  const compression = h.compression
  if (compression !== BI_RGB && compression !== BI_BITFIELDS && compression !== BI_ALPHABITFIELDS) {
    throw new MediaError('Compressed BMP images are not supported')
  }
  if (![1, 4, 8, 16, 24, 32].includes(bpp)) throw undecodable()
  const withMasks = compression !== BI_RGB
  if (withMasks && bpp !== 16 && bpp !== 32) throw undecodable()

  // Info headers (40 bytes) keep their masks right after the header; v2 and later hold them inside it.
  let masks: number[] = []
  let tableStart = at + h.headerSize
  if (withMasks) {
    const count = compression === BI_ALPHABITFIELDS || h.headerSize >= 56 ? 4 : 3
    if (at + 40 + count * 4 > buf.length) throw undecodable()
    masks = Array.from({ length: count }, (_, i) => u32le(buf, at + 40 + i * 4))
    if (h.headerSize === 40) tableStart += count * 4
  } else if (bpp === 16) {
    masks = [0x7c00, 0x03e0, 0x001f]
  }

  let palette: Uint8Array | null = null
  let paletteEnd = tableStart
  if (bpp <= 8) {
    const entry = h.headerSize === 12 ? 3 : 4
    let colors = Math.min(h.colorsUsed || 1 << bpp, 1 << bpp)
    // Core headers cannot say how many colours they use; writers often store fewer than 2^bpp before the pixels.
    if (pixelOffset !== null && pixelOffset >= tableStart)
      colors = Math.min(colors, Math.floor((pixelOffset - tableStart) / entry))
    paletteEnd = tableStart + colors * entry
    if (paletteEnd > buf.length) throw undecodable()
    // Expand to a full-size RGB table so out-of-range indices read black instead of failing.
    palette = new Uint8Array(256 * 3)
    for (let i = 0; i < colors; i++) {
      const p = tableStart + i * entry
      palette[i * 3] = buf[p + 2]!
      palette[i * 3 + 1] = buf[p + 1]!
      palette[i * 3 + 2] = buf[p]!
    }
  }

  const start = pixelOffset ?? paletteEnd
  const stride = Math.ceil((width * bpp) / 32) * 4
  if (start + stride * height > buf.length) throw undecodable()

  const out = new Uint8Array(width * height * 4)
  const [r, g, b, a] = masks.map(channel)
  // Icons carry alpha in the fourth byte of 32-bit pixels; plain BMPs with BI_RGB leave it undefined, so opaque.
  const iconAlpha = icon && bpp === 32 && !withMasks
  for (let y = 0; y < height; y++) {
    const row = start + (h.topDown ? y : height - 1 - y) * stride
    let o = y * width * 4
    for (let x = 0; x < width; x++, o += 4) {
      if (palette) {
        const bit = x * bpp
        const index = (buf[row + (bit >> 3)]! >> (8 - bpp - (bit & 7))) & ((1 << bpp) - 1)
        out[o] = palette[index * 3]!
        out[o + 1] = palette[index * 3 + 1]!
        out[o + 2] = palette[index * 3 + 2]!
        out[o + 3] = 255
      } else if (bpp === 24 || (bpp === 32 && !withMasks)) {
        const p = row + x * (bpp >> 3)
        out[o] = buf[p + 2]!
        out[o + 1] = buf[p + 1]!
        out[o + 2] = buf[p]!
        out[o + 3] = iconAlpha ? buf[p + 3]! : 255
      } else {
        const px = bpp === 16 ? u16le(buf, row + x * 2) : u32le(buf, row + x * 4)
        out[o] = r ? extract(px, r) : 0
        out[o + 1] = g ? extract(px, g) : 0
        out[o + 2] = b ? extract(px, b) : 0
        out[o + 3] = a ? extract(px, a) : 255
      }
    }
  }
  if (icon) applyAndMask(buf, start + stride * height, width, height, out, iconAlpha)
  return { width, height, data: out }
}

/**
 * The AND mask marks transparent pixels of icons without an alpha channel. 32-bit icons normally carry real alpha
 * old ones leave it all zero and rely on the mask. A missing mask (truncated but common) leaves pixels opaque.
 */
function applyAndMask(
  buf: Uint8Array,
  at: number,
  width: number,
  height: number,
  out: Uint8Array,
  hasAlpha: boolean,
): void {
  if (hasAlpha) {
    let anyAlpha = false
    for (let i = 3; i < out.length && !anyAlpha; i += 4) anyAlpha = out[i] !== 0
    if (anyAlpha) return
    for (let i = 3; i < out.length; i += 4) out[i] = 255
  }
  const stride = Math.ceil(width / 32) * 4
  if (at + stride * height > buf.length) return
  for (let y = 0; y < height; y++) {
    const row = at + (height - 1 - y) * stride
    for (let x = 0; x < width; x++) {
      if ((buf[row + (x >> 3)]! >> (7 - (x & 7))) & 1) out[(y * width + x) * 4 + 3] = 0
    }
  }
}

/** Decodes a whole BMP file (limits as `decodeDib`). */
export function decodeBmp(file: Uint8Array, maxPixels: number, maxBytes: number): RgbaImage {
  if (file.length < 18 || ascii(file, 0, 2) !== 'BM') throw undecodable()
  return decodeDib(file, 14, u32le(file, 10), false, maxPixels, maxBytes)
}
