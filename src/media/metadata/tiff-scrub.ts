import { u16be, u32be, u32le } from '../bytes'
import { type Cost, unsafe } from './cost'
import { scrubXmp } from './xmp'

/**
 * The in-place GPS removal of TIFF structures that WebP and HEIF still use until they move to cleanExif (tiff.ts);
 * to be deleted then.
 */

const GPS_IFD = 0x8825
const EXIF_IFD = 0x8769
const INTEROP_IFD = 0xa005
const SUB_IFDS = 0x014a
const ORIENTATION = 0x0112
/** Tags holding XMP, IPTC or Photoshop resources: scanned for GPS properties like any XMP. */
const TEXT_BLOB_TAGS = new Set([700, 33723, 34377])
/** Offsets and byte counts of image data: strips, tiles, the Exif thumbnail. Never zeroed, never overlapped. */
const DATA_TAGS: readonly [number, number][] = [
  [0x0111, 0x0117],
  [0x0144, 0x0145],
  [0x0201, 0x0202],
]
/** Bytes per value of each field type (index = type; 13 is IFD). */
const TYPE_SIZES = [0, 1, 1, 2, 4, 8, 1, 1, 2, 4, 8, 4, 8, 4]
/** Directories followed in one structure (pages, Exif, Interop, sub-images); real files have a handful. */
const MAX_IFDS = 256
/** A GPS directory defines 32 tags; one claiming more than this is not a camera's. */
const MAX_GPS_ENTRIES = 1024

interface TiffReader {
  t: Uint8Array
  u16(at: number): number
  u32(at: number): number
  set16(at: number, v: number): void
}

/** Reads a TIFF structure in its own byte order; null if it does not start with a TIFF header. */
function tiffReader(t: Uint8Array): TiffReader | null {
  if (t.length < 8) return null
  const le = t[0] === 0x49 && t[1] === 0x49
  if (!le && !(t[0] === 0x4d && t[1] === 0x4d)) return null
  const u16 = (at: number) => (le ? t[at]! | (t[at + 1]! << 8) : u16be(t, at))
  const u32 = (at: number) => (le ? u32le(t, at) : u32be(t, at))
  const set16 = (at: number, v: number) => {
    t[at + (le ? 0 : 1)] = v & 0xff
    t[at + (le ? 1 : 0)] = v >> 8
  }
  return u16(2) === 42 ? { t, u16, u32, set16 } : null
}

/** A directory: its offset and the entries that lie inside the structure. */
interface Ifd {
  at: number
  count: number
}

/** Where an entry's value lies when it does not fit in the entry itself; null when inline, unknown or outside. */
function valueRange(r: TiffReader, entry: number): [number, number] | null {
  const size = (TYPE_SIZES[r.u16(entry + 2)] ?? 0) * r.u32(entry + 4)
  if (size <= 4) return null
  const start = r.u32(entry + 8)
  return start < r.t.length ? [start, Math.min(start + size, r.t.length)] : null
}

/** The directory at `at` clipped to the entries that fit (what a lenient reader would read), or null. */
function ifdAt(r: TiffReader, at: number): Ifd | null {
  if (at === 0 || at + 2 > r.t.length) return null
  return { at, count: Math.min(r.u16(at), Math.floor((r.t.length - at - 2) / 12)) }
}

const ifdEnd = (r: TiffReader, ifd: Ifd) => Math.min(ifd.at + 2 + ifd.count * 12 + 4, r.t.length)

/**
 * The directories an entry points at. One value is the entry's own field; an out-of-line array (SubIFDs) is read
 * within the structure's value budget. A removed pointer (`naive`) also counts its field as an offset, as a careless
 * reader would take it, so whatever such a reader could find is zeroed too.
 */
function pointers(r: TiffReader, entry: number, budget: { values: number }, naive: boolean): number[] {
  const type = r.u16(entry + 2)
  const count = r.u32(entry + 4)
  const field = r.u32(entry + 8)
  if ((type !== 4 && type !== 13) || count <= 1) return [field]
  const array = values(r, entry, budget)
  const out = naive ? [field] : []
  for (let i = 0; i < array.length; i++) out.push(array.get(i))
  return out
}

/**
 * Removes location from a TIFF structure in place and returns whether it changed. `all` (TIFF files under
 * STRIP_METADATA=all) also removes the Exif directory and the XMP, IPTC and Photoshop blocks. Throws the refusal when
 * the structure cannot be edited with certainty: too many directories or GPS entries, or GPS data that overlaps
 * other data (a directory, another tag's value, image data).
 */
export function scrubTiff(t: Uint8Array, mode: 'gps' | 'all', cost: Cost): boolean {
  const r = tiffReader(t)
  if (!r) return false // no reader can find tags without a TIFF header
  cost.add(8)
  const removeTags = mode === 'all' ? new Set([GPS_IFD, EXIF_IFD, ...TEXT_BLOB_TAGS]) : new Set([GPS_IFD])
  const budget = { entries: Math.floor(t.length / 12) + 64, values: Math.floor(t.length / 2) + 64 }
  const dirs: Ifd[] = []
  const removals = new Map<Ifd, Set<number>>() // directory -> entry offsets to remove
  const wipedDirs = new Set<number>() // directories zeroed with their values (GPS, and Exif under 'all')
  const wipes: [number, number][] = [] // blocks zeroed whole (under 'all')
  const seen = new Set<number>()
  const queue = [r.u32(4)]
  let changed = false

  while (queue.length > 0) {
    const ifd = ifdAt(r, queue.pop()!)
    if (!ifd || seen.has(ifd.at)) continue
    seen.add(ifd.at)
    if (seen.size > MAX_IFDS) throw unsafe('too many Exif/TIFF directories')
    budget.entries -= ifd.count
    if (budget.entries < 0) throw unsafe('too many entries in the Exif/TIFF directories')
    cost.add(ifd.count * 12 + 6)
    dirs.push(ifd)
    for (let i = 0; i < ifd.count; i++) {
      const entry = ifd.at + 2 + i * 12
      const tag = r.u16(entry)
      if (removeTags.has(tag)) {
        if (!removals.has(ifd)) removals.set(ifd, new Set())
        removals.get(ifd)!.add(entry)
        if (tag === GPS_IFD || tag === EXIF_IFD) for (const p of pointers(r, entry, budget, true)) wipedDirs.add(p)
        else {
          const range = valueRange(r, entry)
          if (range) wipes.push(range)
        }
      } else if (tag === EXIF_IFD || tag === INTEROP_IFD || tag === SUB_IFDS) {
        for (const p of pointers(r, entry, budget, false)) queue.push(p)
      } else if (TEXT_BLOB_TAGS.has(tag)) {
        const range = valueRange(r, entry)
        if (range && scrubXmp(t.subarray(...range), cost)) changed = true
      }
    }
    if (ifd.at + 2 + ifd.count * 12 + 4 <= t.length) queue.push(r.u32(ifd.at + 2 + ifd.count * 12))
  }
  if (removals.size === 0) return changed

  // What is zeroed: each removed directory with the values of its entries, and the removed blocks.
  for (const at of wipedDirs) {
    const ifd = ifdAt(r, at)
    if (!ifd) continue
    if (r.u16(at) > MAX_GPS_ENTRIES) throw unsafe('a GPS directory with too many entries')
    budget.entries -= ifd.count
    if (budget.entries < 0) throw unsafe('too many entries in the Exif/TIFF directories')
    cost.add(ifd.count * 12)
    wipes.push([ifd.at, ifdEnd(r, ifd)])
    for (let i = 0; i < ifd.count; i++) {
      const range = valueRange(r, ifd.at + 2 + i * 12)
      if (range) wipes.push(range)
    }
  }
  const merged = mergeRanges(wipes, cost)

  // Nothing that stays may overlap what is zeroed: the directories kept, their values, and the image data.
  const overlaps = (start: number, end: number) => {
    cost.add(Math.ceil(Math.log2(merged.length + 1)))
    let lo = 0
    let hi = merged.length
    while (lo < hi) {
      const mid = (lo + hi) >> 1
      if (merged[mid]![1] <= start) lo = mid + 1
      else hi = mid
    }
    return lo < merged.length && merged[lo]![0] < end
  }
  for (const ifd of dirs) {
    const gone = removals.get(ifd)
    if (overlaps(ifd.at, ifdEnd(r, ifd))) throw unsafe('GPS data overlaps other metadata')
    const entries = new Map<number, number>()
    for (let i = 0; i < ifd.count; i++) {
      const entry = ifd.at + 2 + i * 12
      if (gone?.has(entry)) continue
      entries.set(r.u16(entry), entry)
      const range = valueRange(r, entry)
      if (range && overlaps(...range)) throw unsafe('GPS data overlaps other metadata')
    }
    for (const [offsetsTag, countsTag] of DATA_TAGS) {
      const offsets = entries.get(offsetsTag)
      const counts = entries.get(countsTag)
      if (offsets === undefined || counts === undefined) continue
      const starts = values(r, offsets, budget)
      const lengths = values(r, counts, budget)
      cost.add(starts.length + lengths.length)
      for (let i = 0; i < Math.min(starts.length, lengths.length); i++) {
        if (overlaps(starts.get(i), starts.get(i) + lengths.get(i))) throw unsafe('GPS data overlaps image data')
      }
    }
  }

  for (const [ifd, gone] of removals) removeEntries(r, ifd, gone, cost)
  for (const [start, end] of merged) {
    t.fill(0, start, end)
    cost.add(end - start)
  }
  return true
}

/** The SHORT or LONG values of an entry (offsets, byte counts), read lazily within the structure's value budget. */
function values(r: TiffReader, entry: number, budget: { values: number }): { length: number; get(i: number): number } {
  const type = r.u16(entry + 2)
  const size = type === 3 ? 2 : type === 4 || type === 13 ? 4 : 0
  const count = r.u32(entry + 4)
  const base = size * count <= 4 ? entry + 8 : r.u32(entry + 8)
  const length = size === 0 ? 0 : Math.max(0, Math.min(count, Math.floor((r.t.length - base) / size)))
  budget.values -= length
  if (budget.values < 0) throw unsafe('too many values in the Exif/TIFF directories')
  return { length, get: (i) => (size === 2 ? r.u16(base + i * 2) : r.u32(base + i * 4)) }
}

/** Sorted, disjoint ranges covering the given ones (k log k for k ranges, each read from at least 12 input bytes). */
function mergeRanges(ranges: [number, number][], cost: Cost): [number, number][] {
  cost.add(ranges.length * Math.ceil(Math.log2(ranges.length + 1)))
  ranges.sort((a, b) => a[0] - b[0])
  const out: [number, number][] = []
  for (const [start, end] of ranges) {
    const last = out[out.length - 1]
    if (last && start <= last[1]) last[1] = Math.max(last[1], end)
    else out.push([start, end])
  }
  return out
}

/** Drops entries from a directory in one pass: kept entries and the next-directory offset move up, the rest is zeroed. */
function removeEntries(r: TiffReader, ifd: Ifd, gone: Set<number>, cost: Cost): void {
  const t = r.t
  let write = ifd.at + 2
  for (let i = 0; i < ifd.count; i++) {
    const entry = ifd.at + 2 + i * 12
    if (gone.has(entry)) continue
    if (write !== entry) t.copyWithin(write, entry, entry + 12)
    write += 12
  }
  const next = ifd.at + 2 + ifd.count * 12
  if (next + 4 <= t.length) {
    t.copyWithin(write, next, next + 4)
    write += 4
  }
  t.fill(0, write, Math.min(next + 4, t.length))
  cost.add(ifd.count * 12 + 4)
  r.set16(ifd.at, ifd.count - gone.size)
}

/** The Orientation of IFD0, if any. */
export function readOrientation(t: Uint8Array, cost: Cost): number | undefined {
  const r = tiffReader(t)
  const ifd = r && ifdAt(r, r.u32(4))
  if (!r || !ifd) return undefined
  cost.add(ifd.count * 12)
  for (let i = 0; i < ifd.count; i++) {
    const entry = ifd.at + 2 + i * 12
    if (r.u16(entry) === ORIENTATION) return r.u16(entry + 8)
  }
  return undefined
}

/** A big-endian TIFF structure whose IFD0 holds only Orientation. */
export function orientationOnlyTiff(orientation: number): Uint8Array {
  return new Uint8Array([
    0x4d,
    0x4d,
    0,
    42,
    0,
    0,
    0,
    8, // header, IFD0 at 8
    0,
    1, // one entry
    0x01,
    0x12,
    0,
    3,
    0,
    0,
    0,
    1,
    0,
    orientation,
    0,
    0, // Orientation, SHORT, 1 value
    0,
    0,
    0,
    0, // no next IFD
  ])
}

export const keepsOrientation = (o: number | undefined): o is number => o !== undefined && o >= 2 && o <= 8
