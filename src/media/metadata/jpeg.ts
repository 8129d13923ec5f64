import { concat, startsWith, u16be, u32be } from '../bytes'
import { type Cost, find, findSeq, unsafe } from './cost'
import { keepsOrientation, orientationOnlyTiff, readOrientation, scrubTiff } from './tiff'
import { hasGpsName, scrubXmp } from './xmp'

const APP1 = 0xe1
const APP13 = 0xed
const COM = 0xfe
const EOI = 0xd9
const SOI = [0xff, 0xd8, 0xff]
const EXIF = [0x45, 0x78, 0x69, 0x66, 0] // "Exif\0" (then a pad byte, normally 0)
const codes = (s: string) => [...s].map((c) => c.charCodeAt(0))
const XMP = codes('http://ns.adobe.com/xap/1.0/\0')
const XMP_EXTENSION = codes('http://ns.adobe.com/xmp/extension/\0')
/** Extended XMP: namespace, 32-character GUID, full length and this part's offset (both 32-bit), then the part. */
const EXTENSION_HEADER = XMP_EXTENSION.length + 32 + 8

interface Segment {
  marker: number
  /** The segment's first byte (its FF) and the end of its payload. */
  start: number
  end: number
  payload: Uint8Array
}

/**
 * Walks one JPEG from its SOI at `start` as libjpeg does: a marker is an FF (fill FFs skipped) followed by a byte
 * that is not 00; anything else between segments (padding, a stray byte) and the entropy-coded data of scans is
 * passed over. Every marker segment before EOI is visited, those between and after scans included. Returns where
 * the image ends (after EOI, or the end of the data).
 */
function walk(b: Uint8Array, start: number, cost: Cost, visit: (s: Segment) => void): number {
  let pos = start + 2
  for (;;) {
    const ff = find(b, 0xff, pos, cost)
    if (ff < 0) return b.length
    let m = ff + 1
    while (b[m] === 0xff) m++
    cost.add(m - ff)
    if (m >= b.length) return b.length
    const marker = b[m]!
    pos = m + 1
    if (marker === EOI) return pos
    // A stuffed 00 in scan data, restart markers, TEM and SOI carry no length.
    if (marker === 0 || marker === 0x01 || marker === 0xd8 || (marker >= 0xd0 && marker <= 0xd7)) continue
    if (pos + 2 > b.length) return b.length
    const length = u16be(b, pos)
    if (length < 2) continue
    const end = Math.min(pos + length, b.length)
    cost.add(4)
    visit({ marker, start: m - 1, end, payload: b.subarray(pos + 2, end) })
    pos = end
  }
}

interface ExtendedPart {
  offset: number
  data: Uint8Array
}

/**
 * Removes GPS from one JPEG's metadata in place: the Exif GPS directory, GPS properties of the XMP packet and of the
 * extended XMP (reassembled from its parts, since a property may straddle two), and of anything else in APP1 and
 * APP13 (Photoshop resources), read as text. Returns where the image ends and whether it changed.
 */
function scrubJpegAt(b: Uint8Array, start: number, cost: Cost): { end: number; changed: boolean } {
  let changed = false
  const extended = new Map<string, ExtendedPart[]>()
  const end = walk(b, start, cost, ({ marker, payload }) => {
    if (marker === APP13) changed = scrubXmp(payload, cost) || changed
    if (marker !== APP1) return
    if (startsWith(payload, EXIF)) changed = scrubTiff(payload.subarray(6), 'gps', cost) || changed
    else if (startsWith(payload, XMP)) changed = scrubXmp(payload.subarray(XMP.length), cost) || changed
    else if (startsWith(payload, XMP_EXTENSION) && payload.length >= EXTENSION_HEADER) {
      const guid = String.fromCharCode(...payload.subarray(XMP_EXTENSION.length, XMP_EXTENSION.length + 32))
      const parts = extended.get(guid) ?? []
      parts.push({ offset: u32be(payload, EXTENSION_HEADER - 4), data: payload.subarray(EXTENSION_HEADER) })
      extended.set(guid, parts)
    } else changed = scrubXmp(payload, cost) || changed
  })
  for (const parts of extended.values()) changed = scrubExtendedXmp(parts, cost) || changed
  return { end, changed }
}

/**
 * Extended XMP is one packet cut into parts at byte offsets: put together, cleaned as one, and written back part by
 * part (same length). Parts that do not tile the packet exactly are not one any reader can assemble; they are only
 * checked, as one text, for GPS names left.
 */
function scrubExtendedXmp(parts: ExtendedPart[], cost: Cost): boolean {
  cost.add(parts.length * Math.ceil(Math.log2(parts.length + 1)))
  parts.sort((a, b) => a.offset - b.offset)
  const whole = concat(parts.map((p) => p.data))
  cost.add(whole.length)
  let next = 0
  for (const p of parts) {
    if (p.offset !== next) {
      if (hasGpsName(whole, cost)) throw unsafe('a GPS property in extended XMP parts that do not fit together')
      return false
    }
    next += p.data.length
  }
  if (!scrubXmp(whole, cost)) return false
  for (const p of parts) p.data.set(whole.subarray(p.offset, p.offset + p.data.length))
  cost.add(whole.length)
  return true
}

/**
 * Images appended after the first one's EOI (Multi-Picture Format: phones store gain maps, depth maps and previews
 * so, each a JPEG with metadata of its own) are cleaned in place too; nothing moves, so the MPF offsets stay right.
 */
function scrubAppended(b: Uint8Array, from: number, cost: Cost): boolean {
  let changed = false
  for (let at = findSeq(b, SOI, from, cost); at >= 0; at = findSeq(b, SOI, at, cost)) {
    const r = scrubJpegAt(b, at, cost)
    changed = r.changed || changed
    at = Math.max(r.end, at + 2)
  }
  return changed
}

/**
 * 'gps': the edits are made in place on `b` (same length, pixels untouched). 'all': APP1 (Exif, XMP), APP13 (IPTC)
 * and comments of the main image are dropped, a non-default orientation is kept in a minimal Exif, and appended
 * images lose their location as under 'gps'. Returns the bytes to store, or null when the file stays as it is.
 */
export function stripJpeg(b: Uint8Array, mode: 'gps' | 'all', cost: Cost): Uint8Array | null {
  if (mode === 'gps') {
    const { end, changed } = scrubJpegAt(b, 0, cost)
    return scrubAppended(b, end, cost) || changed ? b : null
  }
  const parts: Uint8Array[] = []
  let kept = 0
  let orientation: number | undefined
  let exifSlot = -1
  const end = walk(b, 0, cost, ({ marker, start, end, payload }) => {
    if (marker !== APP1 && marker !== APP13 && marker !== COM) return
    if (marker === APP1 && startsWith(payload, EXIF)) {
      orientation ??= readOrientation(payload.subarray(6), cost)
      if (exifSlot < 0) exifSlot = parts.length + 1
    }
    parts.push(b.subarray(kept, start))
    kept = end
  })
  const appendedChanged = scrubAppended(b, end, cost)
  if (parts.length === 0) return appendedChanged ? b : null
  parts.push(b.subarray(kept))
  if (keepsOrientation(orientation)) {
    const exif = concat([new Uint8Array([...EXIF, 0]), orientationOnlyTiff(orientation)])
    const length = exif.length + 2
    parts.splice(exifSlot, 0, concat([new Uint8Array([0xff, APP1, length >> 8, length & 0xff]), exif]))
  }
  const out = concat(parts)
  cost.add(out.length)
  return out
}
