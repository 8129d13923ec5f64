import { u16be, u32be, u32le } from '../bytes'
import { type Cost, unsafe } from './cost'
import {
  DATA_TAGS,
  EXIF_IFD,
  EXIF_TAGS,
  IFD0_TAGS,
  INTEROP_IFD,
  INTEROP_TAGS,
  LONG,
  ORIENTATION,
  ORIENTATION_ONLY,
  SHORT,
  type TagRule,
  TIFF_IMAGE_TAGS,
} from './tiff-tags'

/**
 * TIFF structures: an Exif block (JPEG APP1, PNG eXIf, WebP EXIF, a HEIF Exif item) or a whole TIFF file. Nothing is
 * edited in place: the directories are read, the fields of the whitelist (tiff-tags.ts) that are whole and of the
 * expected type and count are kept, and a new structure is written from them alone, in the same byte order (values
 * are copied as they are). Whatever else the input held (other tags, the GPS directory, maker notes, thumbnails,
 * bytes no directory points at) is not in the output, whoever could have read it.
 */

/** Bytes per value of each field type (index = type; 13 is IFD). */
const TYPE_SIZES = [0, 1, 1, 2, 4, 8, 1, 1, 2, 4, 8, 4, 8, 4]
/** The directories a tag leads to, with the tags kept in each. */
const SUBDIRS: ReadonlyMap<number, ReadonlyMap<number, TagRule>> = new Map([
  [EXIF_IFD, EXIF_TAGS],
  [INTEROP_IFD, INTEROP_TAGS],
])

interface Reader {
  t: Uint8Array
  le: boolean
  u16(at: number): number
  u32(at: number): number
}

/** A reader of a TIFF structure in its own byte order; null unless it starts with a TIFF header (magic 42). */
function tiffReader(t: Uint8Array): Reader | null {
  if (t.length < 8) return null
  const le = t[0] === 0x49 && t[1] === 0x49
  if (!le && !(t[0] === 0x4d && t[1] === 0x4d)) return null
  const u16 = (at: number) => (le ? t[at]! | (t[at + 1]! << 8) : u16be(t, at))
  const u32 = (at: number) => (le ? u32le(t, at) : u32be(t, at))
  return u16(2) === 42 ? { t, le, u16, u32 } : null
}

/** A field to write: its value's bytes as read, a directory it points at, or blocks of image data it locates. */
type Field = { tag: number } & (
  | { type: number; count: number; bytes: Uint8Array }
  | { dir: Field[] }
  | { blocks: Uint8Array[] }
)

/** What one pass over a structure found: the byte ranges it read as whole parts, and whether anything was left out. */
interface Walk {
  r: Reader
  cost: Cost
  read: [number, number][]
  leftOut: boolean
  /** The lowest Orientation kept: 1 where any is, 2 where only a turned or mirrored one is worth keeping. */
  minOrientation: number
  /** Fields read specially (a TIFF file's strips and tiles); null when the entry is left out. */
  special?: (entry: number, tag: number) => Field | null
}

/** Where an entry's value lies (inline or not), or null when its type is unknown or the value is not all there. */
function valueRange(r: Reader, entry: number): [number, number] | null {
  const size = (TYPE_SIZES[r.u16(entry + 2)] ?? 0) * r.u32(entry + 4)
  if (size === 0) return null
  const start = size <= 4 ? entry + 8 : r.u32(entry + 8)
  return start + size <= r.t.length ? [start, start + size] : null
}

/**
 * The kept fields of the directory at `at`, following the Exif and Interop pointers among them; null when the
 * directory is not whole. Every field not kept, a next-directory link (IFD1, further pages) and a second entry of the
 * same tag mark the walk as having left something out.
 */
function readDir(w: Walk, at: number, rules: ReadonlyMap<number, TagRule>): Field[] | null {
  const { r } = w
  if (at < 8 || at + 2 > r.t.length) return null
  const count = r.u16(at)
  const end = at + 2 + count * 12
  if (end > r.t.length) return null
  w.cost.add(end - at)
  if (end + 4 > r.t.length || r.u32(end) !== 0) w.leftOut = true
  w.read.push([at, Math.min(end + 4, r.t.length)])
  const fields: Field[] = []
  const seen = new Set<number>()
  for (let entry = at + 2; entry < end; entry += 12) {
    const tag = r.u16(entry)
    const field = seen.has(tag) ? null : readField(w, entry, tag, rules.get(tag))
    seen.add(tag)
    if (field) fields.push(field)
    else w.leftOut = true
  }
  return fields
}

/** One entry as the field to write, or null when it is not one to keep. */
function readField(w: Walk, entry: number, tag: number, rule: TagRule | undefined): Field | null {
  const { r } = w
  const type = r.u16(entry + 2)
  const count = r.u32(entry + 4)
  if (!rule?.types.includes(type) || count < rule.min || count > rule.max) return null
  if (w.special && DATA_TAGS.some(([offsets]) => offsets === tag)) return w.special(entry, tag)
  const range = valueRange(r, entry)
  if (!range) return null
  const sub = SUBDIRS.get(tag)
  if (sub) {
    const dir = readDir(w, r.u32(entry + 8), sub)
    return dir && dir.length > 0 ? { tag, dir } : null
  }
  if (tag === ORIENTATION) {
    const o = r.u16(range[0])
    if (o < w.minOrientation || o > 8) return null
  }
  if (range[1] - range[0] > 4) w.read.push(range)
  w.cost.add(range[1] - range[0])
  return { tag, type, count, bytes: r.t.subarray(...range) }
}

/**
 * Whether the structure holds nothing but what was read: every byte outside the header, the directories and the
 * values kept is zero (padding). Only then may the input be kept as it is; anything else could hide a copy of what
 * was left out.
 */
function onlyWhatWasRead(w: Walk): boolean {
  const { t } = w.r
  w.cost.add(w.read.length * Math.ceil(Math.log2(w.read.length + 1)))
  w.read.sort((a, b) => a[0] - b[0])
  let from = 0
  for (const [start, end] of [...w.read, [t.length, t.length] as const]) {
    for (let i = from; i < start; i++) if (t[i] !== 0) return false
    w.cost.add(Math.max(0, start - from))
    from = Math.max(from, end)
  }
  return true
}

const pad2 = (n: number) => n + (n & 1)

/** Bytes a directory takes when written: entries, the link, values that do not fit in an entry, what it points at. */
function dirSize(fields: Field[]): number {
  let size = 2 + fields.length * 12 + 4
  for (const f of fields) {
    if ('dir' in f) size += dirSize(f.dir)
    else if ('blocks' in f)
      size += (f.blocks.length > 1 ? f.blocks.length * 4 : 0) + f.blocks.reduce((n, b) => n + pad2(b.length), 0)
    else if (f.bytes.length > 4) size += pad2(f.bytes.length)
  }
  return size
}

/** Writes a TIFF structure, in the given byte order, holding the directory `ifd0` (its values after it). */
function writeTiff(ifd0: Field[], le: boolean, cost: Cost): Uint8Array {
  const out = new Uint8Array(8 + dirSize(ifd0))
  const view = new DataView(out.buffer)
  const u16 = (at: number, v: number) => view.setUint16(at, v, le)
  const u32 = (at: number, v: number) => view.setUint32(at, v, le)
  out.set(le ? [0x49, 0x49] : [0x4d, 0x4d])
  u16(2, 42)
  u32(4, 8)
  const writeDir = (fields: Field[], at: number): number => {
    fields.sort((a, b) => a.tag - b.tag)
    u16(at, fields.length)
    let next = at + 2 + fields.length * 12 + 4 // where the values go
    fields.forEach((f, i) => {
      const entry = at + 2 + i * 12
      u16(entry, f.tag)
      if ('dir' in f) {
        u16(entry + 2, LONG)
        u32(entry + 4, 1)
        u32(entry + 8, next)
        next = writeDir(f.dir, next)
        return
      }
      if ('blocks' in f) {
        u16(entry + 2, LONG)
        u32(entry + 4, f.blocks.length)
        let offsetsAt = entry + 8
        if (f.blocks.length > 1) {
          u32(entry + 8, next)
          offsetsAt = next
          next += f.blocks.length * 4
        }
        f.blocks.forEach((block, k) => {
          u32(offsetsAt + k * 4, next)
          out.set(block, next)
          next += pad2(block.length)
        })
        return
      }
      u16(entry + 2, f.type)
      u32(entry + 4, f.count)
      if (f.bytes.length <= 4) out.set(f.bytes, entry + 8)
      else {
        u32(entry + 8, next)
        out.set(f.bytes, next)
        next += pad2(f.bytes.length)
      }
    })
    return next
  }
  writeDir(ifd0, 8)
  cost.add(out.length)
  return out
}

/**
 * An Exif block rebuilt from the whitelist: under 'gps' the camera, software, author, dates, exposure and lens tags
 * (tiff-tags.ts), under 'all' only an Orientation that turns or mirrors the picture. Returns `tiff` itself when it
 * already holds only that (so a file with nothing to remove keeps its bytes), a new structure otherwise, or null when
 * nothing is kept (the caller drops the block). `tiff` starts at the TIFF header (an `Exif\0\0` prefix removed by the
 * caller); anything that cannot be read whole (no TIFF header, magic other than 42, a directory or value past the
 * end) is left out, never thrown on.
 */
export function cleanExif(tiff: Uint8Array, mode: 'gps' | 'all', cost: Cost): Uint8Array | null {
  const r = tiffReader(tiff)
  if (!r) return null
  const w: Walk = { r, cost, read: [[0, 8]], leftOut: false, minOrientation: mode === 'all' ? 2 : 1 }
  const ifd0 = readDir(w, r.u32(4), mode === 'all' ? ORIENTATION_ONLY : IFD0_TAGS)
  if (!ifd0 || ifd0.length === 0) return null
  if (!w.leftOut && onlyWhatWasRead(w)) return tiff
  return writeTiff(ifd0, r.le, cost)
}

/** The SHORT or LONG values of an entry (offsets, byte counts), or null when they are not all in the file. */
function numbers(r: Reader, entry: number): number[] | null {
  const type = r.u16(entry + 2)
  const range = valueRange(r, entry)
  const size = type === SHORT ? 2 : 4
  if (!range || (type !== SHORT && type !== LONG)) return null
  const out: number[] = []
  for (let at = range[0]; at < range[1]; at += size) out.push(size === 2 ? r.u16(at) : r.u32(at))
  return out
}

/**
 * A TIFF file rebuilt around its first image: the tags describing its pixels, its colour profile and orientation
 * (both modes), under 'gps' also the Exif whitelist and the Exif directory rebuilt; the image data copied as it is
 * and its offsets rewritten. Further pages, thumbnails and sub-images, and every other tag are left out. Returns null
 * when the file holds nothing else. Throws the refusal when the image data cannot be located whole (the picture
 * itself would be lost).
 */
export function stripTiff(b: Uint8Array, mode: 'gps' | 'all', cost: Cost): Uint8Array | null {
  const r = tiffReader(b)
  if (!r) throw unsafe('not a TIFF structure')
  const rules = mode === 'all' ? TIFF_IMAGE_TAGS : new Map([...IFD0_TAGS, ...TIFF_IMAGE_TAGS])
  let copied = 0
  const special = (entry: number, tag: number): Field | null => {
    const countsTag = DATA_TAGS.find(([offsets]) => offsets === tag)![1]
    const counts = findEntry(r, r.u32(4), countsTag)
    const starts = numbers(r, entry)
    const lengths = counts === null ? null : numbers(r, counts)
    if (!starts || !lengths || starts.length !== lengths.length) throw unsafe('TIFF image data that cannot be located')
    w.read.push(valueRange(r, entry)!)
    const blocks = starts.map((start, i) => {
      const end = start + lengths[i]!
      copied += lengths[i]!
      if (end > b.length || copied > b.length) throw unsafe('TIFF image data past the end of the file or overlapping')
      w.read.push([start, end])
      return b.subarray(start, end)
    })
    cost.add(copied + starts.length * 8)
    return { tag, blocks }
  }
  const w: Walk = { r, cost, read: [[0, 8]], leftOut: false, minOrientation: 1, special }
  const ifd0 = readDir(w, r.u32(4), rules)
  if (!ifd0) throw unsafe('a TIFF directory that is cut off')
  if (!ifd0.some((f) => 'blocks' in f)) throw unsafe('a TIFF without image data')
  if (!w.leftOut && onlyWhatWasRead(w)) return null
  return writeTiff(ifd0, r.le, cost)
}

/** The entry of `tag` in the directory at `at` (known to be whole), or null. */
function findEntry(r: Reader, at: number, tag: number): number | null {
  const count = r.u16(at)
  for (let entry = at + 2; entry < at + 2 + count * 12; entry += 12) if (r.u16(entry) === tag) return entry
  return null
}
