import { ascii, startsWith, u16le, u32be, u32le } from './bytes'
import type { ImageFormat } from './formats'

/** How many leading bytes of a file `detectFormat` needs to see. */
export const DETECT_HEAD_BYTES = 64 * 1024

/** DIB header sizes that exist in the wild: core, info, v2, v3, OS/2 v2, v4, v5. */
export const DIB_HEADER_SIZES: ReadonlySet<number> = new Set([12, 40, 52, 56, 64, 108, 124])

const PNG_SIGNATURE = [0x89, 0x50, 0x4e, 0x47, 0x0d, 0x0a, 0x1a, 0x0a]

export function isPng(head: Uint8Array): boolean {
  return startsWith(head, PNG_SIGNATURE)
}

/** The brands of an ISO media file's leading `ftyp` box (major and compatible), or none. */
function ftypBrands(head: Uint8Array): string[] {
  if (head.length < 16 || ascii(head, 4, 4) !== 'ftyp') return []
  const boxSize = u32be(head, 0)
  if (boxSize < 16 || boxSize > head.length) return []
  const brands = [ascii(head, 8, 4)]
  for (let at = 16; at + 4 <= boxSize; at += 4) brands.push(ascii(head, at, 4))
  return brands
}

/**
 * HEIF brands of still images and sequences (ISO/IEC 23008-12): HEVC ones and the codec-neutral mif1/msf1. AVIF
 * files carry mif1 too, so their own brands are checked first.
 */
const HEIF_BRANDS = new Set(['heic', 'heix', 'heim', 'heis', 'hevc', 'hevx', 'hevm', 'hevs', 'mif1', 'msf1'])

function isIco(head: Uint8Array): boolean {
  // The first directory entry's reserved byte must be zero: weeds out other files that happen to start 00 00 01 00.
  return startsWith(head, [0, 0, 1, 0]) && head.length >= 22 && u16le(head, 4) > 0 && head[9] === 0
}

/**
 * SVG is text, so it is recognised by its structure: after an optional BOM, only whitespace, the XML declaration,
 * processing instructions, comments and an `svg` doctype may precede the root element, which must be `<svg`.
 */
function isSvg(head: Uint8Array): boolean {
  const text = new TextDecoder().decode(head) // drops a UTF-8 BOM
  let i = 0
  for (;;) {
    while (i < text.length && /\s/.test(text[i]!)) i++
    if (text.startsWith('<?', i)) {
      const end = text.indexOf('?>', i + 2)
      if (end < 0) return false
      i = end + 2
    } else if (text.startsWith('<!--', i)) {
      const end = text.indexOf('-->', i + 4)
      if (end < 0) return false
      i = end + 3
    } else if (text.startsWith('<!DOCTYPE', i)) {
      if (!/^<!DOCTYPE\s+svg[\s>[]/.test(text.slice(i, i + 20))) return false
      // An internal subset may itself contain '>', so skip to its closing ']' first.
      const close = text.indexOf('>', i)
      const subset = text.indexOf('[', i)
      const from = subset >= 0 && subset < close ? text.indexOf(']', subset) : i
      if (from < 0) return false
      const end = text.indexOf('>', from)
      if (end < 0) return false
      i = end + 1
    } else {
      return /^<svg[\s/>]/.test(text.slice(i, i + 5))
    }
  }
}

/** Decides the format from the file's first bytes (pass up to `DETECT_HEAD_BYTES`), never from a name or client header. */
export function detectFormat(head: Uint8Array): ImageFormat | null {
  if (startsWith(head, [0xff, 0xd8, 0xff])) return 'jpeg'
  if (isPng(head)) return 'png'
  if (head.length >= 6 && (ascii(head, 0, 6) === 'GIF87a' || ascii(head, 0, 6) === 'GIF89a')) return 'gif'
  if (head.length >= 12 && ascii(head, 0, 4) === 'RIFF' && ascii(head, 8, 4) === 'WEBP') return 'webp'
  if (head.length >= 18 && ascii(head, 0, 2) === 'BM' && DIB_HEADER_SIZES.has(u32le(head, 14))) return 'bmp'
  if (isIco(head)) return 'ico'
  if (startsWith(head, [0x49, 0x49, 0x2a, 0x00]) || startsWith(head, [0x4d, 0x4d, 0x00, 0x2a])) return 'tiff'
  const brands = ftypBrands(head)
  if (brands.includes('avif') || brands.includes('avis')) return 'avif'
  if (brands.some((brand) => HEIF_BRANDS.has(brand))) return 'heic'
  if (isSvg(head)) return 'svg'
  return null
}
