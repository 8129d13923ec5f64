import { ascii, u16be, u32be } from '../bytes'
import { type Cost, find, unsafe } from './cost'
import { scrubTiff } from './tiff'
import { blankXmp, scrubXmp } from './xmp'

/**
 * AVIF and HEIC (both HEIF): metadata lives in items of the top-level `meta` box: an `Exif` item and a `mime` item
 * of type application/rdf+xml (XMP), whose bytes `iloc` places in the file or in `meta`'s `idat`. They are edited in place:
 * the Exif item's GPS directory zeroed (STRIP_METADATA=all: the whole item), GPS properties of the XMP item blanked
 * (all: the whole packet). Nothing moves, so every offset in iloc stays right. A layout that cannot be edited so with
 * certainty (an item in another file or built from other items, protected, compressed, cut off, overlapping itself,
 * or a malformed meta box) is refused.
 */

/** An Exif item's payload holding no tags: TIFF header offset 0, a big-endian header, an empty IFD0. */
const EMPTY_EXIF = new Uint8Array([0, 0, 0, 0, 0x4d, 0x4d, 0, 42, 0, 0, 0, 8, 0, 0, 0, 0, 0, 0])

/** Extents one metadata item may have; writers use one. */
const MAX_EXTENTS = 64

interface Box {
  type: string
  start: number
  /** Where the payload starts (after the header) and where the box ends. */
  body: number
  end: number
}

const malformed = () => unsafe('a malformed HEIF meta box')

/** The boxes between `start` and `end`; `strict` refuses a box that does not fit (inside meta), else stops there. */
function boxes(b: Uint8Array, start: number, end: number, strict: boolean, cost: Cost): Box[] {
  const out: Box[] = []
  for (let pos = start; pos + 8 <= end; ) {
    let size = u32be(b, pos)
    let body = pos + 8
    if (size === 1) {
      if (pos + 16 > end) break
      size = readUint(b, pos + 8, 8)
      body = pos + 16
    } else if (size === 0) size = end - pos
    cost.add(body - pos)
    const type = ascii(b, pos + 4, 4)
    if (size < body - pos || pos + size > end) {
      if (strict || type === 'meta') throw malformed()
      break
    }
    out.push({ type, start: pos, body, end: pos + size })
    pos += size
  }
  return out
}

/** A big-endian unsigned integer of 0, 4 or 8 bytes (iloc's field sizes). */
function readUint(b: Uint8Array, at: number, size: number): number {
  if (size === 0) return 0
  if (size === 4) return u32be(b, at)
  if (size !== 8) throw malformed()
  const high = u32be(b, at)
  if (high >= 1 << 21) throw malformed() // past 2^53: no real file is that large
  return high * 2 ** 32 + u32be(b, at + 4)
}

type ItemKind = 'exif' | 'xmp' | 'encoded-xmp'

/** The metadata items `iinf` declares, by id. */
function metadataItems(b: Uint8Array, iinf: Box, cost: Cost): Map<number, ItemKind> {
  const items = new Map<number, ItemKind>()
  const version = b[iinf.body]!
  const first = iinf.body + 4 + (version === 0 ? 2 : 4)
  if (first > iinf.end) throw malformed()
  for (const infe of boxes(b, first, iinf.end, true, cost)) {
    if (infe.type !== 'infe') continue
    const v = b[infe.body]!
    let at = infe.body + 4
    const id = v === 3 ? u32be(b, at) : u16be(b, at)
    at += v === 3 ? 4 : 2
    const protection = u16be(b, at)
    at += 2
    let type = 'mime' // versions 0 and 1 describe files by content type only
    if (v >= 2) {
      type = ascii(b, at, 4)
      at += 4
    }
    if (at > infe.end) throw malformed()
    const string = () => {
      const nul = find(b.subarray(0, infe.end), 0, at, cost)
      const s = nul < 0 ? ascii(b, at, infe.end - at) : ascii(b, at, nul - at)
      at = nul < 0 ? infe.end : nul + 1
      return s
    }
    string() // item name
    let kind: ItemKind | null = type === 'Exif' ? 'exif' : null
    if (type === 'mime' && string() === 'application/rdf+xml')
      kind = at < infe.end && string() !== '' ? 'encoded-xmp' : 'xmp'
    if (!kind) continue
    if (protection !== 0) throw unsafe('protected metadata in a HEIF file')
    items.set(id, kind)
  }
  return items
}

/** The byte ranges of each metadata item, from `iloc` (its file offsets, or offsets into `idat`). */
function itemExtents(b: Uint8Array, iloc: Box, idat: Box | undefined, items: Map<number, ItemKind>, cost: Cost) {
  const extents = new Map<number, [number, number][]>()
  const version = b[iloc.body]!
  let at = iloc.body + 4
  if (at + 2 > iloc.end) throw malformed()
  const offsetSize = b[at]! >> 4
  const lengthSize = b[at]! & 15
  const baseSize = b[at + 1]! >> 4
  const indexSize = version === 1 || version === 2 ? b[at + 1]! & 15 : 0
  at += 2
  const count = version < 2 ? u16be(b, at) : u32be(b, at)
  at += version < 2 ? 2 : 4
  const extentSize = indexSize + offsetSize + lengthSize
  for (let i = 0; i < count; i++) {
    const head = (version < 2 ? 2 : 4) + (version === 1 || version === 2 ? 2 : 0) + 2 + baseSize + 2
    if (at + head > iloc.end) throw malformed()
    cost.add(head)
    const id = version < 2 ? u16be(b, at) : u32be(b, at)
    at += version < 2 ? 2 : 4
    const method = version === 1 || version === 2 ? u16be(b, at) & 15 : 0
    if (version === 1 || version === 2) at += 2
    const reference = u16be(b, at)
    const base = readUint(b, at + 2, baseSize)
    at += 2 + baseSize
    const n = u16be(b, at)
    at += 2
    if (at + n * extentSize > iloc.end) throw malformed()
    if (!items.has(id)) {
      at += n * extentSize // skipped without reading: the cost does not depend on the count
      continue
    }
    if (reference !== 0 || method === 2) throw unsafe('HEIF metadata stored in another file or built from other items')
    const ranges = extents.get(id) ?? []
    if (ranges.length + n > MAX_EXTENTS) throw unsafe('HEIF metadata in too many pieces')
    const container = method === 1 ? idat : { body: 0, end: b.length }
    if (!container) throw malformed()
    for (let e = 0; e < n; e++) {
      const offset = readUint(b, at + indexSize, offsetSize)
      const length = readUint(b, at + indexSize + offsetSize, lengthSize)
      at += extentSize
      cost.add(extentSize)
      const start = container.body + base + offset
      const end = length === 0 ? container.end : start + length
      if (end > container.end || start > end) throw unsafe('HEIF metadata that extends past the file')
      ranges.push([start, end])
    }
    extents.set(id, ranges)
  }
  return extents
}

/**
 * Cleans the metadata items of an AVIF file in place ('gps': GPS only; 'all': the whole items) and returns whether
 * it changed; throws the refusal for a layout that cannot be edited with certainty.
 */
export function stripAvif(b: Uint8Array, mode: 'gps' | 'all', cost: Cost): Uint8Array | null {
  let changed = false
  let budget = b.length // bytes of items gathered over the file: overlapping items cannot multiply the work
  for (const meta of boxes(b, 0, b.length, false, cost)) {
    if (meta.type !== 'meta') continue
    const children = boxes(b, meta.body + 4, meta.end, true, cost)
    const iinf = children.find((c) => c.type === 'iinf')
    const iloc = children.find((c) => c.type === 'iloc')
    if (!iinf) continue
    const items = metadataItems(b, iinf, cost)
    if (items.size === 0) continue
    if (!iloc) continue // declared but placed nowhere: no reader can find its bytes
    const extents = itemExtents(
      b,
      iloc,
      children.find((c) => c.type === 'idat'),
      items,
      cost,
    )
    for (const [id, ranges] of extents) {
      const kind = items.get(id)!
      if (kind === 'encoded-xmp' && mode === 'gps') throw unsafe('compressed XMP in a HEIF file')
      const sorted = [...ranges].sort((x, y) => x[0] - y[0])
      for (let i = 1; i < sorted.length; i++)
        if (sorted[i]![0] < sorted[i - 1]![1]) throw unsafe('HEIF metadata that overlaps itself')
      // One extent is edited where it lies; several are put together, edited, and written back.
      const size = ranges.reduce((n, [s, e]) => n + e - s, 0)
      budget -= size
      if (budget < 0) throw unsafe('HEIF metadata items that overlap each other')
      const item = ranges.length === 1 ? b.subarray(...ranges[0]!) : new Uint8Array(size)
      if (ranges.length > 1) {
        let o = 0
        for (const [s, e] of ranges) {
          item.set(b.subarray(s, e), o)
          o += e - s
        }
      }
      cost.add(ranges.length > 1 ? 2 * size : 0)
      const edited = cleanItem(item, kind, mode, cost)
      if (edited && ranges.length > 1) {
        let o = 0
        for (const [s, e] of ranges) {
          b.set(item.subarray(o, o + e - s), s)
          o += e - s
        }
      }
      changed = edited || changed
    }
  }
  return changed ? b : null
}

function cleanItem(item: Uint8Array, kind: ItemKind, mode: 'gps' | 'all', cost: Cost): boolean {
  if (mode === 'all') {
    if (kind !== 'exif') return blankXmp(item, cost)
    // What stays is an Exif item with no tags (readers take all zeros for a broken one), or zeros if it cannot hold that.
    item.fill(0)
    if (item.length >= EMPTY_EXIF.length) item.set(EMPTY_EXIF)
    cost.add(item.length)
    return item.length > 0
  }
  if (kind !== 'exif') return scrubXmp(item, cost)
  // An Exif item starts with the offset of its TIFF header (after an optional "Exif\0\0").
  if (item.length < 4) return false
  const tiff = 4 + u32be(item, 0)
  if (tiff > item.length) throw unsafe('a HEIF Exif item that points past its end')
  return scrubTiff(item.subarray(tiff), 'gps', cost)
}
