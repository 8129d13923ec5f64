import { crc32, deflateSync, inflateSync } from 'node:zlib'
import { ascii, concat, u32be } from '../bytes'
import { type Cost, find, unsafe } from './cost'
import { keepsOrientation, orientationOnlyTiff, readOrientation, scrubTiff } from './tiff'
import { scrubXmp } from './xmp'

/** PNG chunks that only describe the image; dropping them never changes how it looks. */
export const PNG_METADATA_CHUNKS: ReadonlySet<string> = new Set(['eXIf', 'tEXt', 'iTXt', 'zTXt', 'tIME'])
const TEXT_CHUNKS = new Set(['tEXt', 'zTXt', 'iTXt'])

const XMP_KEYWORD = 'XML:com.adobe.xmp'
/** ImageMagick's hex-encoded profiles: "Raw profile type exif" (or APP1), "... xmp", "... iptc", "... 8bim". */
const RAW_PROFILE = 'Raw profile type '
/**
 * Compressed text chunks are inflated within a budget for the whole file: 64 KiB plus 64 bytes per byte of the file,
 * at most 16 MiB. Real XMP fits many times over; a deflate bomb (16 MB of XMP in 24 KB) passes it and is refused.
 */
const INFLATE_SLACK = 64 << 10
const INFLATE_RATIO = 64
const MAX_INFLATED = 16 << 20

function pngChunk(type: string, data: Uint8Array): Uint8Array {
  const out = new Uint8Array(12 + data.length)
  const view = new DataView(out.buffer)
  view.setUint32(0, data.length)
  for (let i = 0; i < 4; i++) out[4 + i] = type.charCodeAt(i)
  out.set(data, 8)
  view.setUint32(8 + data.length, crc32(out.subarray(4, 8 + data.length)))
  return out
}

/** Where a text chunk's text starts, its keyword and whether the text is compressed; null if it is not well formed. */
function textLayout(type: string, data: Uint8Array, cost: Cost) {
  const nul = find(data.subarray(0, 80), 0, 0, cost)
  if (nul < 1) return null
  const keyword = ascii(data, 0, nul)
  if (type === 'tEXt') return { keyword, textStart: nul + 1, compressed: false }
  if (type === 'zTXt') return { keyword, textStart: nul + 2, compressed: true }
  // iTXt: compression flag and method, then a language tag and a translated keyword, each ending in NUL.
  const language = find(data, 0, nul + 3, cost)
  const translated = language < 0 ? -1 : find(data, 0, language + 1, cost)
  return translated < 0 ? null : { keyword, textStart: translated + 1, compressed: data[nul + 1] === 1 }
}

const hexValue = (c: number) =>
  c >= 0x30 && c <= 0x39 ? c - 0x30 : c >= 0x61 && c <= 0x66 ? c - 0x57 : c >= 0x41 && c <= 0x46 ? c - 0x37 : -1
const HEX = [...'0123456789abcdef'].map((c) => c.charCodeAt(0))

/**
 * An ImageMagick raw profile ("\n<name>\n<length>\n<hex lines>"): decoded, cleaned like the block it holds (Exif, or
 * any other read as text; ICC is left alone), and written back over the same hex digits, so the text keeps its length.
 */
function scrubRawProfile(text: Uint8Array, kind: string, cost: Cost): boolean {
  if (kind === 'icc' || kind === 'icm') return false
  let i = 0
  while (text[i] === 0x0a) i++
  i = find(text, 0x0a, i, cost) + 1 // past the name line
  if (i === 0) return false
  while (text[i] === 0x20 || text[i] === 0x0a) i++
  let length = 0
  for (; text[i]! >= 0x30 && text[i]! <= 0x39; i++) length = length * 10 + text[i]! - 0x30
  const start = i
  const decoded = new Uint8Array(Math.min(length, (text.length - start) >> 1))
  let n = 0
  for (let hi = -1; i < text.length && n < decoded.length; i++) {
    const v = hexValue(text[i]!)
    if (v < 0) continue
    if (hi < 0) hi = v
    else {
      decoded[n++] = (hi << 4) | v
      hi = -1
    }
  }
  cost.add(i - start + decoded.length)
  const exif = kind === 'exif' || kind === 'app1'
  const tiffAt = exif && decoded[0] === 0x45 ? 6 : 0 // "Exif\0\0" before the TIFF header
  const changed = exif ? scrubTiff(decoded.subarray(tiffAt), 'gps', cost) : scrubXmp(decoded, cost)
  if (!changed) return false
  let digit = 0
  for (i = start; i < text.length && digit < 2 * n; i++) {
    if (hexValue(text[i]!) < 0) continue
    const byte = decoded[digit >> 1]!
    text[i] = HEX[digit & 1 ? byte & 15 : byte >> 4]!
    digit++
  }
  cost.add(i - start)
  return true
}

/**
 * 'gps': GPS goes from eXIf and from the XMP and raw profiles of text chunks. Uncompressed chunks are edited in place
 * (their CRC rewritten); compressed ones are inflated (within the budget), cleaned and compressed again.
 * 'all': eXIf, text chunks and tIME are dropped, a non-default orientation is kept in a minimal eXIf.
 * Returns the bytes to store, or null when the file stays as it is.
 */
export function stripPng(b: Uint8Array, mode: 'gps' | 'all', cost: Cost): Uint8Array | null {
  const replacements: { start: number; end: number; chunk: Uint8Array | null }[] = []
  let inPlace = false
  let orientation: number | undefined
  let exifSlot = -1
  let inflateBudget = Math.min(MAX_INFLATED, INFLATE_SLACK + INFLATE_RATIO * b.length)
  const inflate = (data: Uint8Array) => {
    cost.add(data.length)
    try {
      const out = new Uint8Array(inflateSync(data, { maxOutputLength: Math.max(1, inflateBudget) }))
      inflateBudget -= out.length
      cost.add(out.length)
      return out
    } catch (err) {
      const tooLarge = (err as { code?: string }).code === 'ERR_BUFFER_TOO_LARGE'
      cost.add(tooLarge ? inflateBudget : 0) // inflated up to the budget before giving up
      throw unsafe(
        tooLarge ? 'compressed metadata larger than allowed when inflated' : 'compressed metadata could not be read',
      )
    }
  }

  let pos = 8
  while (pos + 8 <= b.length) {
    const length = u32be(b, pos)
    const type = ascii(b, pos + 4, 4)
    const end = pos + 12 + length
    cost.add(12)
    if (end > b.length) {
      // A cut-off last chunk: no reader can check it; one holding metadata is dropped ('all') or refused ('gps').
      if (PNG_METADATA_CHUNKS.has(type) && type !== 'tIME') {
        if (mode === 'gps') throw unsafe('a cut-off metadata chunk')
        replacements.push({ start: pos, end: b.length, chunk: null })
      }
      break
    }
    const data = b.subarray(pos + 8, end - 4)
    const chunkStart = pos
    pos = end
    if (mode === 'all') {
      if (!PNG_METADATA_CHUNKS.has(type)) {
        if (type === 'IEND') break
        continue
      }
      if (type === 'eXIf') {
        orientation ??= readOrientation(data, cost)
        if (exifSlot < 0) exifSlot = replacements.length
      }
      replacements.push({ start: chunkStart, end, chunk: null })
      continue
    }
    if (type === 'IEND') break
    let changed = false
    let rewrite: Uint8Array | null = null
    if (type === 'eXIf') changed = scrubTiff(data, 'gps', cost)
    else if (TEXT_CHUNKS.has(type)) {
      const layout = textLayout(type, data, cost)
      const kind = layout?.keyword === XMP_KEYWORD ? 'xmp' : layout?.keyword.startsWith(RAW_PROFILE) ? 'raw' : null
      if (layout && kind) {
        const stored = data.subarray(layout.textStart)
        const text = layout.compressed ? inflate(stored) : stored
        const profile = layout.keyword.slice(RAW_PROFILE.length).toLowerCase()
        changed = kind === 'xmp' ? scrubXmp(text, cost) : scrubRawProfile(text, profile, cost)
        if (changed && layout.compressed) {
          const deflated = deflateSync(text)
          cost.add(text.length + deflated.length)
          rewrite = pngChunk(type, concat([data.subarray(0, layout.textStart), deflated]))
        }
      }
    }
    if (rewrite) replacements.push({ start: chunkStart, end, chunk: rewrite })
    else if (changed) {
      // Edited in place: only the CRC changes.
      new DataView(b.buffer, b.byteOffset).setUint32(end - 4, crc32(b.subarray(chunkStart + 4, end - 4)))
      cost.add(length)
      inPlace = true
    }
  }

  if (keepsOrientation(orientation)) {
    const at = replacements[exifSlot]!
    replacements[exifSlot] = { ...at, chunk: pngChunk('eXIf', orientationOnlyTiff(orientation)) }
  }
  if (replacements.length === 0) return inPlace ? b : null
  const parts: Uint8Array[] = []
  let kept = 0
  for (const r of replacements) {
    parts.push(b.subarray(kept, r.start))
    if (r.chunk) parts.push(r.chunk)
    kept = r.end
  }
  parts.push(b.subarray(kept))
  const out = concat(parts)
  cost.add(out.length)
  return out
}
