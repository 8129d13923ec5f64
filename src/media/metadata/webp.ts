import { ascii, concat, startsWith, u32le } from '../bytes'
import type { Cost } from './cost'
import { keepsOrientation, orientationOnlyTiff, readOrientation, scrubTiff } from './tiff'
import { scrubXmp } from './xmp'

const VP8X_EXIF = 0x08
const VP8X_XMP = 0x04
const EXIF_HEADER = [0x45, 0x78, 0x69, 0x66, 0, 0] // "Exif\0\0", which some writers put before the TIFF header

/** The RIFF chunks of a WebP, with payloads clipped to the data (a cut-off last chunk is still seen). */
function chunks(b: Uint8Array, cost: Cost): { type: string; start: number; end: number; data: Uint8Array }[] {
  const out = []
  const riffEnd = Math.min(b.length, 8 + u32le(b, 4))
  for (let pos = 12; pos + 8 <= riffEnd; ) {
    const size = u32le(b, pos + 4)
    const end = Math.min(pos + 8 + size + (size & 1), riffEnd)
    out.push({ type: ascii(b, pos, 4), start: pos, end, data: b.subarray(pos + 8, Math.min(pos + 8 + size, riffEnd)) })
    cost.add(8)
    pos = end
  }
  return out
}

/**
 * 'gps': the EXIF and XMP chunks are cleaned in place (same length, so no size changes), wherever they are, VP8X or
 * not. 'all': they are dropped, the RIFF size and VP8X flags fixed, a non-default orientation kept in a minimal EXIF.
 * Returns the bytes to store, or null when the file stays as it is.
 */
export function stripWebp(b: Uint8Array, mode: 'gps' | 'all', cost: Cost): Uint8Array | null {
  if (b.length < 12) return null
  const all = chunks(b, cost)
  if (mode === 'gps') {
    let changed = false
    for (const { type, data } of all) {
      if (type === 'EXIF')
        changed = scrubTiff(data.subarray(startsWith(data, EXIF_HEADER) ? 6 : 0), 'gps', cost) || changed
      if (type === 'XMP ') changed = scrubXmp(data, cost) || changed
    }
    return changed ? b : null
  }

  const kept = all.filter((c) => c.type !== 'EXIF' && c.type !== 'XMP ')
  if (kept.length === all.length) return null
  const exif = all.find((c) => c.type === 'EXIF')
  const orientation = exif && readOrientation(exif.data.subarray(startsWith(exif.data, EXIF_HEADER) ? 6 : 0), cost)
  const vp8x = kept[0]?.type === 'VP8X' && kept[0].data.length >= 1 ? kept[0] : null
  const parts = kept.map((c) => b.subarray(c.start, c.end))
  if (vp8x) {
    const header = b.slice(vp8x.start, vp8x.end)
    const withExif = keepsOrientation(orientation)
    header[8] = (header[8]! & ~(VP8X_EXIF | VP8X_XMP)) | (withExif ? VP8X_EXIF : 0)
    parts[0] = header
    if (withExif) {
      const tiff = orientationOnlyTiff(orientation)
      const chunk = new Uint8Array(8 + tiff.length)
      chunk.set([0x45, 0x58, 0x49, 0x46], 0) // "EXIF"
      new DataView(chunk.buffer).setUint32(4, tiff.length, true)
      chunk.set(tiff, 8)
      parts.push(chunk)
    }
  }
  const body = concat(parts)
  const out = new Uint8Array(12 + body.length)
  out.set(b.subarray(0, 12))
  new DataView(out.buffer).setUint32(4, 4 + body.length, true)
  out.set(body, 12)
  cost.add(out.length)
  return out
}
