import { concat, startsWith, u16be } from '../bytes'
import { type Cost, find, unsafe } from './cost'
import { cleanExif } from './tiff'

const APP0 = 0xe0
const APP1 = 0xe1
const APP2 = 0xe2
const APP14 = 0xee
const SOS = 0xda
const EOI = 0xd9
const codes = (s: string) => [...s].map((c) => c.charCodeAt(0))
const EXIF = codes('Exif\0\0')
const JFIF = codes('JFIF\0')
const ICC = codes('ICC_PROFILE\0')
const ADOBE = codes('Adobe')
/** JFIF's header without its thumbnail: version, density unit, X and Y density, then a 0x0 thumbnail. */
const JFIF_LENGTH = 14
/** Adobe's APP14: version, two flag words and the colour transform the decoder needs. */
const ADOBE_LENGTH = 12

/** Markers whose segments make the picture: frame headers (SOF0-15), tables (DHT, DAC, DQT), DRI, DNL, DHP, EXP. */
const isImageMarker = (m: number) => (m >= 0xc0 && m <= 0xcf && m !== 0xc8) || (m >= 0xdb && m <= 0xdf)
const isFrameHeader = (m: number) => m >= 0xc0 && m <= 0xcf && m !== 0xc4 && m !== 0xc8 && m !== 0xcc

function segment(marker: number, payload: Uint8Array): Uint8Array {
  const length = payload.length + 2
  return concat([new Uint8Array([0xff, marker, length >> 8, length & 0xff]), payload])
}

/** Where the entropy-coded data starting at `from` ends: at the first marker that is not a stuffed 00 or a restart. */
function scanEnd(b: Uint8Array, from: number, cost: Cost): number {
  let at = from
  for (;;) {
    const ff = find(b, 0xff, at, cost)
    if (ff < 0) return b.length
    const next = b[ff + 1]
    if (next === 0 || next === 0xff || (next !== undefined && next >= 0xd0 && next <= 0xd7)) at = ff + 1
    else return ff
  }
}

/**
 * What becomes of one marker segment: kept as it is (true), replaced (bytes), or dropped (null). Kept: the segments
 * that make the picture, JFIF (without its thumbnail), the ICC profile, Adobe's colour transform, and the first
 * `Exif\0\0` APP1 rebuilt by cleanExif. Everything else is dropped: XMP, extended XMP, IPTC and Photoshop resources
 * (APP13), comments, MPF, other Exif segments (a continuation, `EXIF`/`exif`, bytes before `Exif`), any other APPn
 * and unknown markers.
 */
function keep(marker: number, payload: Uint8Array, state: { exif: boolean; mode: 'gps' | 'all'; cost: Cost }) {
  if (isImageMarker(marker)) return true
  if (marker === APP0 && startsWith(payload, JFIF) && payload.length >= JFIF_LENGTH) {
    if (payload.length === JFIF_LENGTH && payload[12] === 0 && payload[13] === 0) return true
    const header = payload.slice(0, JFIF_LENGTH)
    header.fill(0, 12)
    return segment(APP0, header)
  }
  if (marker === APP2 && startsWith(payload, ICC)) return true
  if (marker === APP14 && startsWith(payload, ADOBE) && payload.length >= ADOBE_LENGTH) {
    return payload.length === ADOBE_LENGTH ? true : segment(APP14, payload.subarray(0, ADOBE_LENGTH))
  }
  if (marker === APP1 && startsWith(payload, EXIF) && !state.exif) {
    state.exif = true
    const tiff = payload.subarray(EXIF.length)
    const clean = cleanExif(tiff, state.mode, state.cost)
    return clean === tiff ? true : clean && segment(APP1, concat([new Uint8Array(EXIF), clean]))
  }
  return null
}

/**
 * A JPEG rebuilt from what `keep` keeps, walked as libjpeg reads it: marker segments, and after each SOS the
 * entropy-coded data up to the next marker, copied byte for byte (so are the tables and frame headers: the picture is
 * never decoded or encoded). Fill and stray bytes between segments, and everything after EOI (Multi-Picture Format
 * images, trailers) are dropped; a file that ends without EOI gets one (what a decoder reads at a cut-off end is the
 * same, and strict decoders refuse a file without it). Returns null when nothing was dropped. Throws the refusal when
 * the picture itself cannot be walked: a segment running past the end, no frame header or no scan.
 */
export function stripJpeg(b: Uint8Array, mode: 'gps' | 'all', cost: Cost): Uint8Array | null {
  if (!startsWith(b, [0xff, 0xd8])) throw unsafe('not a JPEG')
  const parts: Uint8Array[] = [b.subarray(0, 2)]
  const state = { exif: false, mode, cost }
  let changed = false
  let frame = false
  let scan = false
  let pos = 2
  let ended = false
  while (pos < b.length) {
    if (b[pos] !== 0xff || b[pos + 1] === 0xff) {
      // Bytes that are not a marker (padding, fill bytes before one): libjpeg skips them, so they are dropped.
      changed = true
      pos = b[pos] === 0xff ? pos + 1 : find(b, 0xff, pos, cost)
      if (pos < 0) break
      continue
    }
    const marker = b[pos + 1]
    cost.add(4)
    if (marker === undefined) break
    if (marker === EOI) {
      parts.push(b.subarray(pos, pos + 2))
      pos += 2
      ended = true
      break
    }
    if (marker === 0 || marker === 0x01 || marker === 0xd8 || (marker >= 0xd0 && marker <= 0xd7)) {
      changed = true // a marker without a segment outside a scan: nothing a decoder uses
      pos += 2
      continue
    }
    const end = pos + 2 + (pos + 4 <= b.length ? u16be(b, pos + 2) : 0)
    if (end < pos + 4 || end > b.length) throw unsafe('a JPEG segment that runs past the end of the file')
    frame ||= isFrameHeader(marker)
    if (marker === SOS) {
      scan = true
      const data = scanEnd(b, end, cost)
      parts.push(b.subarray(pos, data))
      pos = data
      continue
    }
    const kept = keep(marker, b.subarray(pos + 4, end), state)
    if (kept === true) parts.push(b.subarray(pos, end))
    else if (kept) parts.push(kept)
    changed ||= kept !== true
    pos = end
  }
  if (!frame || !scan) throw unsafe('a JPEG without a frame header or scan')
  if (!changed && ended && pos === b.length) return null
  if (!ended) parts.push(new Uint8Array([0xff, EOI]))
  const out = concat(parts)
  cost.add(out.length)
  return out
}
